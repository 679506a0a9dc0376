"""The sync ``Client``'s direct path: the broker's own operations, driven from the caller's thread.

A :class:`SyncTransport` (redis-py's blocking client, or a psycopg connection pool) runs
the very steps the asyncio broker runs (:mod:`pqueue.steps`): the same scripts, SQL,
codecs and decoding; only the I/O call differs. When it cannot serve a call (the server
is unreachable, its pool is exhausted) it raises :class:`Hop` and the call takes the
client's loop thread instead, whose broker reports the outage, retries and raises exactly
as before; the direct path then stays off for :data:`HOP_FOR` seconds. ADR 0120.

Each backend hands out its own transport (``broker.sync_transport()``, ADR 0136): this
module knows no backend, and no backend is chosen by its module's name.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pqueue.broker import JobPage
from pqueue.combine import Combiner, Outcome, Request, merging
from pqueue.errors import BrokerUnavailable, ClientClosed
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus
from pqueue.steps import Steps

T = TypeVar("T")

HOP_FOR = 1.0
"""Seconds every call takes the loop thread after the direct path failed to reach the server."""


class Hop(BrokerUnavailable):
    """The direct path cannot serve this call now; the client sends it through its loop thread.

    Never reaches a caller: :class:`~pqueue.Client` catches it.
    """


class SyncTransport(Protocol):
    """Blocking twins of the broker's producer calls (each drives the broker's own steps)."""

    def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]: ...

    def enqueue_each(self, requests: list[Request]) -> list[Outcome]:
        """Several callers' enqueues in one round trip, each with its own outcome."""
        ...

    def get_job(self, job_id: str) -> Job: ...

    def list_queues(self) -> list[str]: ...

    def list_jobs(
        self, status: JobStatus, *, queue: str | None, type: str | None, limit: int, offset: int
    ) -> JobPage: ...

    def close(self) -> None: ...


Q = TypeVar("Q")
R = TypeVar("R")
Q_co = TypeVar("Q_co", covariant=True)
R_contra = TypeVar("R_contra", contravariant=True)


class StepsBroker(Protocol[Q_co, R_contra]):
    """A broker's producer operations as steps (what a transport drives)."""

    def enqueue_steps(self, specs: Sequence[JobSpec]) -> Steps[Q_co, R_contra, list[EnqueueResult]]: ...

    def get_job_steps(self, job_id: str) -> Steps[Q_co, R_contra, Job]: ...

    def list_queues_steps(self) -> Steps[Q_co, R_contra, list[str]]: ...

    def list_jobs_steps(
        self, status: JobStatus, *, queue: str | None, type: str | None, limit: int, offset: int
    ) -> Steps[Q_co, R_contra, JobPage]: ...


class StepsTransport(Generic[Q, R]):
    """What every blocking transport shares: each call is its broker's steps, run by
    :meth:`run` (the backend's one blocking round trip, and its error translation)."""

    def __init__(self, operations: StepsBroker[Q, R]) -> None:
        self._operations = operations
        self._merged = merging(self.enqueue)

    def run(self, steps: Steps[Q, R, T]) -> T:
        raise NotImplementedError

    def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        return self.run(self._operations.enqueue_steps(specs))

    def enqueue_each(self, requests: list[Request]) -> list[Outcome]:
        """Several callers' enqueues: by default as one enqueue (one statement and commit),
        each request again alone if that fails (:func:`pqueue.combine.merged`)."""
        return self._merged(requests)

    def get_job(self, job_id: str) -> Job:
        return self.run(self._operations.get_job_steps(job_id))

    def list_queues(self) -> list[str]:
        return self.run(self._operations.list_queues_steps())

    def list_jobs(
        self, status: JobStatus, *, queue: str | None, type: str | None, limit: int, offset: int
    ) -> JobPage:
        steps = self._operations.list_jobs_steps(status, queue=queue, type=type, limit=limit, offset=offset)
        return self.run(steps)


@runtime_checkable
class HandsOutSyncTransport(Protocol):
    """A broker with a direct path for the sync ``Client`` (Redis and Postgres; the memory
    broker has none). The backend builds its own transport, so this module knows no backend."""

    def sync_transport(self) -> SyncTransport:
        """A new blocking transport over this broker's steps, owned (and closed) by the caller."""
        ...


def sync_transport(broker: object) -> SyncTransport | None:
    """``broker``'s direct transport, or None when it has none (every sync call hops)."""
    return broker.sync_transport() if isinstance(broker, HandsOutSyncTransport) else None


class DirectPath:
    """A transport with its enqueue combiner (threads share round trips) and hop window."""

    def __init__(self, transport: SyncTransport) -> None:
        self.transport = transport
        self.combiner = Combiner(transport.enqueue_each)
        self._hop_until = 0.0
        self.closed = False
        self._calls = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # close() waits on it for calls in flight

    def usable(self) -> bool:
        return time.monotonic() >= self._hop_until

    def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """``specs`` in the combiner's next round trip; raises :class:`Hop` if it cannot."""
        return self.run(self.combiner.submit, specs)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the direct path; a :class:`Hop` closes the path for :data:`HOP_FOR`."""
        with self._lock:
            if self.closed:
                raise ClientClosed("pqueue.Client is closed")
            self._calls += 1
        try:
            return fn(*args)
        except Hop:
            self._hop_until = time.monotonic() + HOP_FOR
            raise
        except Exception:
            if self.closed:  # its connections were closed under it
                raise ClientClosed("pqueue.Client was closed while this call was in flight") from None
            raise
        finally:
            with self._lock:
                self._calls -= 1
                if self.closed and not self._calls:
                    self._idle.notify_all()

    def close(self, grace: float) -> None:
        """Let calls in flight finish for ``grace`` seconds, then close the connections."""
        with self._idle:
            self.closed = True
            self._idle.wait_for(lambda: not self._calls, timeout=grace)
        self.transport.close()
