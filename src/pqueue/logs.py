"""Structured logs through stdlib ``logging``: one record per settled job.

Records carry ``job_id``, ``job_type``, ``queue``, ``attempt``, ``duration`` and
``outcome`` as attributes (``extra``), so a JSON formatter or a log shipper gets fields,
and a plain formatter still gets a readable sentence. :class:`JobLogger` is the
middleware that writes them; workers install it by default.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from pqueue.middleware import JobReport, Middleware, Outcome

job_log = logging.getLogger("pqueue.job")

_LEVELS = {
    Outcome.COMPLETED: logging.INFO,
    Outcome.DUPLICATE: logging.INFO,
    Outcome.RELEASED: logging.INFO,
    Outcome.CANCELLED: logging.WARNING,
    Outcome.RETRY: logging.WARNING,
    Outcome.DEAD: logging.ERROR,
    Outcome.LOST: logging.WARNING,
}

JOB_FIELDS = ("job_id", "job_type", "queue", "attempt", "duration", "outcome")
"""The structured fields of every job record (plus ``error`` and ``retry_in`` when set)."""


class JobLogger(Middleware):
    """Logs every settled delivery on the ``pqueue.job`` logger."""

    def __init__(self, logger: logging.Logger = job_log) -> None:
        self.logger = logger

    def after_job(self, report: JobReport) -> None:
        level = _LEVELS[report.outcome]
        if not self.logger.isEnabledFor(level):
            return
        job = report.job
        fields: dict[str, Any] = {
            "job_id": job.id,
            "job_type": job.type,
            "queue": job.queue,
            "attempt": job.attempt,
            "duration": round(report.duration, 6),
            "outcome": str(report.outcome),
        }
        text = f"{job.type} {job.id} attempt {job.attempt}: {report.outcome} after {report.duration:.3f}s"
        if report.error is not None:
            fields["error"] = f"{type(report.error).__qualname__}: {report.error}"
            text += f": {fields['error']}"
        if report.retry_in is not None:
            fields["retry_in"] = round(report.retry_in, 3)
            text += f"; next try in {report.retry_in:.1f}s"
        if report.reason:
            fields["reason"] = report.reason
            text += f" ({report.reason})"
        self.logger.log(level, text, extra=fields)


_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and every ``extra`` field."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str, ensure_ascii=False)


class Demote(logging.Filter):
    """A logger filter that turns a library's chatty records (below ``ERROR``) into DEBUG ones.

    psycopg_pool logs a WARNING for every failed reconnect attempt of every pool (hundreds
    in a one-second Postgres restart) and an INFO for every connection it adds. pqueue
    reports an outage itself, once (:mod:`pqueue.brokers.health`), so those records are
    folded into DEBUG: ``--log-level DEBUG`` still shows them, nothing else does.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).getEffectiveLevel() <= logging.DEBUG
        return True


def demote(logger_name: str) -> None:
    """Install :class:`Demote` on ``logger_name`` (once)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, Demote) for f in logger.filters):
        logger.addFilter(Demote())


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Set up the root logger for the CLI: ``text`` (human) or ``json`` (one object per line)."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
