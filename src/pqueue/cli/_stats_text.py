"""How :class:`~pqueue.Stats` reads as text: the queue table's cells, one line per limit group
and the plain-text page ``str(stats)`` prints. ``pqueue stats`` draws the same cells with rich
(:func:`pqueue.cli.stats.render`), so the two never drift apart.

Presentation lives here, beside the command, and not on the data object (issue 23, ADR 0137).
It needs nothing but the standard library, so ``str(stats)`` works without the ``cli`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pqueue.durations import format_duration
from pqueue.job import JobStatus
from pqueue.limits import LimitState

if TYPE_CHECKING:
    from pqueue.client import Stats

COLUMNS = (JobStatus.WAITING, *(s for s in JobStatus if s is not JobStatus.WAITING))
"""The status columns: every status, as ``/stats`` and ``--json`` count them, waiting first
(it comes before pending in a job's life) and cancelled last."""


def table(stats: Stats) -> tuple[list[str], list[list[str]]]:
    """The header and one row of text cells per queue: counts, done/s, oldest pending age."""
    header = ["queue", *(s.value for s in COLUMNS), "done/s", "oldest pending"]
    rows = [
        [
            f"{queue} (paused)" if queue in stats.paused else queue,
            *(str(per.get(s, 0)) for s in COLUMNS),
            f"{stats.done_per_second.get(queue, 0.0):.2f}",
            _age(stats.oldest_pending_age.get(queue)),
        ]
        for queue, per in stats.queues.items()
    ]
    return header, rows


def limit_lines(stats: Stats) -> list[str]:
    """One line per limit group, shown under the queue table."""
    return [limit_line(group) for group in stats.limits]


def limit_line(group: LimitState) -> str:
    """``limit api/acme: 2/5 active, 7 waiting, 1.0 tokens at 20/s``."""
    active = f"{group.active}/{group.concurrency}" if group.concurrency is not None else str(group.active)
    line = f"limit {group.queue}/{group.key}: {active} active, {group.waiting} waiting"
    if group.rate is not None and group.tokens is not None:
        line += f", {group.tokens:.1f} tokens at {group.rate:g}/s"
    return line


def plain_text(stats: Stats) -> str:
    """A plain-text table a person can read: one line per queue, the limit groups, then the
    workers (``str(stats)``)."""
    header, rows = table(stats)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        for row in [header, *rows]
    ]
    if not rows:
        lines.append("(no queues yet)")
    lines += limit_lines(stats)
    names = ", ".join(f"{w.id} ({w.host} pid {w.pid})" for w in stats.workers)
    lines.append(f"workers: {len(stats.workers)}" + (f": {names}" if names else ""))
    return "\n".join(lines)


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(seconds)
