"""Middleware: the seam that logging, metrics and tracing plug into.

Subclass :class:`Middleware` and override the hooks you need; give instances to
``Client``/``AsyncClient`` (enqueue hooks) and ``Worker`` (job hooks). Hooks run on
the worker's event loop thread, never inside a handler's thread. A hook that raises
is logged and ignored on the job path (observability must not lose jobs); on the
enqueue path the error reaches the caller and nothing is enqueued.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pqueue.broker import RecoveryReport
from pqueue.job import EnqueueResult, Job, JobSpec
from pqueue.spec import recheck_spec

log = logging.getLogger("pqueue.middleware")


class Outcome(StrEnum):
    """How one delivery of a job ended, as the worker settled it."""

    COMPLETED = "completed"
    """The handler returned; the job is acked."""
    RETRY = "retry"
    """The handler failed; the job waits for its next attempt."""
    DEAD = "dead"
    """The handler failed for good (no retries left, or SkipRetry): dead-lettered."""
    RELEASED = "released"
    """Handed back unrun, no attempt burnt (drain, busy idempotency key, unknown type)."""
    CANCELLED = "cancelled"
    """Its handler was cut short by a drain past the shutdown timeout: handed back, no attempt burnt."""
    DUPLICATE = "duplicate"
    """Its idempotency key already succeeded: acked without running."""
    LOST = "lost"
    """The broker refused the settlement: the lease expired and the job may run again."""


@dataclass(frozen=True, slots=True)
class JobReport:
    """What happened to one delivery: passed to :meth:`Middleware.after_job` and logged."""

    job: Job
    outcome: Outcome
    duration: float
    """Seconds the handler ran (0.0 when it did not run)."""
    error: BaseException | None = None
    retry_in: float | None = None
    """Seconds until the next attempt (outcome RETRY or a delayed RELEASED)."""
    reason: str = ""


class Middleware:
    """Base class: every hook is a no-op, so override only what you need."""

    def before_enqueue(self, spec: JobSpec) -> JobSpec:
        """Return the spec to store (e.g. ``dataclasses.replace(spec, meta=...)`` to add a trace id)."""
        return spec

    def after_enqueue(self, spec: JobSpec, result: EnqueueResult) -> None:
        """Called once the broker stored (or refused as a duplicate) the job."""

    def before_job(self, job: Job) -> None:
        """Called on the worker loop just before the handler starts."""

    def on_error(self, job: Job, error: BaseException) -> None:
        """Called when the handler raised (including timeouts), before the job is settled."""

    def after_job(self, report: JobReport) -> None:
        """Called once the delivery is settled durably (acked, failed or released)."""

    def after_recover(self, report: RecoveryReport) -> None:
        """Called on the worker loop when this worker's housekeeping took back jobs whose lease
        expired (a crashed or stalled worker's, any worker's): each such job is reported once."""


def _overrides(middleware: Middleware, hook: str) -> bool:
    return getattr(type(middleware), hook) is not getattr(Middleware, hook)


class MiddlewareChain:
    """Middleware in order, with only the hooks each one overrides (a cheap no-op when empty)."""

    def __init__(self, middleware: Iterable[Middleware] = ()) -> None:
        self.items: tuple[Middleware, ...] = tuple(middleware)
        for item in self.items:
            if not isinstance(item, Middleware):
                raise TypeError(f"middleware must subclass pqueue.middleware.Middleware, got {item!r}")
        self._before_enqueue = [m for m in self.items if _overrides(m, "before_enqueue")]
        self._after_enqueue = [m for m in self.items if _overrides(m, "after_enqueue")]
        # The per-job hooks are kept bound, in calling order: they run twice per job.
        self._before_job = [m.before_job for m in self.items if _overrides(m, "before_job")]
        self._on_error = [m for m in self.items if _overrides(m, "on_error")]
        self._after_job = [m.after_job for m in reversed(self.items) if _overrides(m, "after_job")]
        self._after_recover = [m for m in self.items if _overrides(m, "after_recover")]
        self.wants_jobs = bool(self._before_job or self._on_error or self._after_job)

    def before_enqueue(self, specs: Sequence[JobSpec]) -> list[JobSpec]:
        """The specs as the hooks leave them; any spec a hook replaced is checked again."""
        if not self._before_enqueue:
            return list(specs)
        out = list(specs)
        for m in self._before_enqueue:
            out = [m.before_enqueue(spec) for spec in out]
        return [new if new is old else recheck_spec(new) for new, old in zip(out, specs, strict=True)]

    def after_enqueue(self, specs: Sequence[JobSpec], results: Sequence[EnqueueResult]) -> None:
        for m in self._after_enqueue:
            for spec, result in zip(specs, results, strict=True):
                _guard(m.after_enqueue, spec, result)

    def before_job(self, job: Job) -> None:
        for hook in self._before_job:
            try:  # inline rather than _guard: one frame less per hook on the hot path
                hook(job)
            except Exception:  # noqa: BLE001 - logged by _failed, then ignored
                _failed(hook)

    def on_error(self, job: Job, error: BaseException) -> None:
        for m in self._on_error:
            _guard(m.on_error, job, error)

    def after_job(self, report: JobReport) -> None:
        for hook in self._after_job:
            try:
                hook(report)
            except Exception:  # noqa: BLE001 - logged by _failed, then ignored
                _failed(hook)

    def after_recover(self, report: RecoveryReport) -> None:
        for m in self._after_recover:
            _guard(m.after_recover, report)


def _guard(hook: Callable[..., object], *args: object) -> None:
    try:
        hook(*args)
    except Exception:  # noqa: BLE001 - logged by _failed, then ignored
        _failed(hook)


def _failed(hook: Callable[..., object]) -> None:
    """Log the exception being handled: a hook failed and was ignored."""
    log.exception("middleware hook %s failed; ignored", getattr(hook, "__qualname__", hook))
