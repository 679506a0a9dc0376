"""The control seam: pause and resume queues, cancel running jobs (ADR 0105, 0106).

A third protocol beside :class:`~pqueue.broker.Broker` (hot path) and
:class:`~pqueue.broker.Inspector` (admin), kept apart so the hot path's seam does not
grow. Brokers store the state and make the atomic, fenced changes; what to do about a
cancelled running job (stop its handler, report it) is decided above the seam, in the
worker (:mod:`pqueue.worker.cancels`).

- A paused queue keeps taking enqueues, but claims (and hand-offs) skip it until it is
  resumed. The state lives in the broker, so it outlives worker restarts.
- ``cancel_active`` moves an ``active`` job to ``cancelled`` at once, revoking its lease
  (the worker's late ack, fail or extend is refused, so it is never retried or
  dead-lettered), and announces the id on the broker's push channel, which workers hear
  through :meth:`Controller.wait_for_cancels`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pqueue.errors import InvalidName, InvalidRequest
from pqueue.spec import validate_queue_name

CANCEL_REASON = "cancelled while running"
"""The reason recorded with a running job cancelled without a reason of its own."""

CANCEL_KIND = "Cancelled"
"""The ``ErrorInfo.kind`` recorded in a job's error history when it is cancelled while running."""

MAX_REASON_CHARS = 500
"""Longest reason kept with a cancelled job (longer ones are cut)."""


def control_queue(queue: object) -> str:
    """Check a queue name given to pause/resume (same rule on every backend)."""
    if not isinstance(queue, str):
        raise InvalidRequest(f"queue must be a queue name, got {queue!r}")
    try:
        return validate_queue_name(queue)
    except InvalidName as exc:
        raise InvalidRequest(str(exc)) from None


def cancel_reason(reason: object) -> str:
    """The reason to record for a cancel (a short text; blank means the default)."""
    if not isinstance(reason, str):
        raise InvalidRequest(f"reason must be text, got {reason!r}")
    reason = " ".join(reason.split())
    return reason[:MAX_REASON_CHARS] if reason else CANCEL_REASON


@runtime_checkable
class Controller(Protocol):
    """Pause/resume queues and cancel running jobs; implemented by every backend."""

    async def pause(self, queue: str) -> bool:
        """Stop claims and hand-offs from ``queue`` until :meth:`resume`; enqueues go on and
        jobs already claimed finish. True if it was running, False if already paused.
        Raises :class:`~pqueue.errors.InvalidRequest` for a name no queue could have."""
        ...

    async def resume(self, queue: str) -> bool:
        """Let workers claim from ``queue`` again and wake the idle ones; True if it was
        paused, False if it was not."""
        ...

    async def paused_queues(self) -> list[str]:
        """The paused queues, sorted by name."""
        ...

    async def cancel_active(self, job_id: str, *, reason: str = CANCEL_REASON) -> bool:
        """Cancel a running (``active``) job: it becomes ``cancelled`` now, ``reason`` goes
        into its error history, its lease is revoked, and its id is published for the
        workers (:meth:`wait_for_cancels`). False if the job is not active.
        Raises :class:`~pqueue.errors.JobNotFound`."""
        ...

    async def wait_for_cancels(self, timeout: float) -> list[str]:
        """Ids of jobs cancelled while running, heard on the broker's push channel since the
        previous call; waits up to ``timeout`` seconds for the first. The first call starts
        listening (earlier messages are not heard); ``close`` stops."""
        ...
