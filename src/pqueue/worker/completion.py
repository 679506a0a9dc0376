"""``job.transaction()``: a handler completes its job in its own database transaction.

At-least-once delivery runs a handler again when its ack was lost in a crash, so a
handler that writes to the database can write twice. Here the handler's writes and the
job's ack commit in one transaction (River's ``JobCompleteTx``): the effect happens
exactly once. The broker opens, acks in and ends the transaction
(:class:`pqueue.broker.CompletionTransactions`); the policy is here:

- the ack runs as the block ends cleanly, fenced by the lease token; a lease lost by
  then raises :class:`~pqueue.errors.LeaseLost` inside the block's exit, so the whole
  transaction rolls back and a zombie's writes never land;
- an exception in the block rolls everything back and the job is not completed: the
  worker records the failure and retries by the usual rules;
- once the commit went through, the worker settles nothing more: it reports the job
  completed, whatever the handler does after the block (ADR 0151);
- one block per run at a time: a block entered while another of the same job is open
  raises :class:`~pqueue.errors.NestedTransaction` at its entry, before anything is
  written (nested, the inner block's ack made the outer one's commit fail; ADR 0158);
- the commit is the point of no return for a timeout: until it begins, the timeout wins
  (a sync handler's block that reaches its end after the timeout rolls back with
  :class:`~pqueue.worker.threads.JobTimeout`, even when the handler swallowed the one
  raised in its thread); once it has begun, the worker waits for it and a commit that
  went through completes the job (ADR 0158).

Async handlers use ``async with``, sync handlers (run on the worker's threads) ``with``;
both find their run through a context variable the executor sets, which the copied
context of a sync handler's thread carries too.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pqueue.broker import AckTransaction, AckTransactionSync, Capability, CompletionTransactions
from pqueue.errors import LeaseLost, NestedTransaction, NotSupported
from pqueue.worker.threads import JobTimeout

if TYPE_CHECKING:
    from pqueue.broker import FullBroker
    from pqueue.job import Job, Lease
    from pqueue.worker.threads import ThreadCall

Run = tuple[str, str]
"""(job id, lease token): one run of a job; the token tells a zombie run of the same job apart."""


def run_of(lease: Lease) -> Run:
    return (lease.job.id, lease.token)


class Completions:
    """One worker's side of transactional completion: which jobs committed their ack."""

    def __init__(
        self,
        broker: FullBroker,
        *,
        settling: Callable[[Lease], None],
        encode: Callable[[Job, Any], str | None],
    ) -> None:
        self.broker = broker
        self.settling = settling
        """Marks the lease as being settled, so a heartbeat refused after the commit is no loss."""
        self.encode = encode
        """The result's JSON text, as the worker stores a handler's return value."""
        self.committed: set[Run] = set()
        """Runs whose handler committed their job's completion; the executor takes them out."""
        self._lock = threading.Lock()
        self._open: set[Run] = set()
        """Runs with a block open (entered, not yet ended)."""
        self._committing: dict[Run, threading.Event] = {}
        """Runs whose block has begun its ack and commit; the event is set when the block ends."""
        self._timed_out: dict[Run, ThreadCall] = {}
        """Sync runs past their timeout, whose blocks may no longer commit, until their thread ends."""

    def take(self, lease: Lease) -> bool:
        """Whether this run completed its job in its handler's transaction (forgets it)."""
        if not self.committed:
            return False
        run = run_of(lease)
        if run in self.committed:
            self.committed.discard(run)
            return True
        return False

    # -- the rules of a block's life (called from the handler's task or thread) ----------

    def opening(self, lease: Lease) -> None:
        """A block of this run begins: refused while another is open, or past the timeout."""
        run = run_of(lease)
        with self._lock:
            if run in self._open:
                raise NestedTransaction(
                    f"job {lease.job.id}: job.transaction() entered while another block of this job is "
                    "open; a job completes once, in one transaction: write in the open block"
                )
            if run in self._timed_out:
                raise _timed_out(lease, "before this block began")
            self._open.add(run)

    def committing(self, lease: Lease) -> None:
        """The block ended cleanly and is about to ack and commit: refused past the timeout."""
        run = run_of(lease)
        with self._lock:
            if run in self._timed_out:
                raise _timed_out(lease, "before its block could commit")
            self._committing[run] = threading.Event()

    def closed(self, lease: Lease) -> None:
        """The block ended (committed or rolled back)."""
        run = run_of(lease)
        with self._lock:
            self._open.discard(run)
            ended = self._committing.pop(run, None)
        if ended is not None:
            ended.set()

    def time_out(self, lease: Lease, call: ThreadCall) -> threading.Event | None:
        """A sync handler reached its timeout: from now on its blocks may not commit; or, when
        one is committing already, the event set once that commit has ended (it decides)."""
        run = run_of(lease)
        with self._lock:
            committing = self._committing.get(run)
            if committing is not None:
                return committing
            if self._timed_out:  # forget the runs whose thread has ended since
                self._timed_out = {r: c for r, c in self._timed_out.items() if not c.done}
            self._timed_out[run] = call
            return None


def _timed_out(lease: Lease, when: str) -> JobTimeout:
    return JobTimeout(
        f"job {lease.job.id} ran past its timeout {when}; its transaction was rolled back "
        "(the job was failed as timed out)"
    )


_RUN: contextvars.ContextVar[tuple[Completions, Lease] | None] = contextvars.ContextVar(
    "pqueue_running_job", default=None
)


def enter(completions: Completions, lease: Lease) -> contextvars.Token[tuple[Completions, Lease] | None]:
    """Mark ``lease`` as the job this task (and a sync handler's copied context) runs."""
    return _RUN.set((completions, lease))


def leave(token: contextvars.Token[tuple[Completions, Lease] | None]) -> None:
    _RUN.reset(token)


def _capable(broker: FullBroker) -> CompletionTransactions:
    if Capability.TRANSACTIONAL_COMPLETION in broker.capabilities and isinstance(
        broker, CompletionTransactions
    ):
        return broker
    raise NotSupported(
        f"{type(broker).__name__} cannot complete a job in a database transaction: it lacks the "
        f"{Capability.TRANSACTIONAL_COMPLETION.value!r} capability (Postgres and SQLite have it; "
        "docs/delivery-semantics.md)",
        capability=Capability.TRANSACTIONAL_COMPLETION.value,
    )


class JobTransaction:
    """What ``job.transaction(conn)`` returns: ``async with`` it in an async handler, ``with``
    it in a sync one. It gives the connection (or the session passed in) to write on; set
    :attr:`result` inside the block to store a result with the job."""

    def __init__(self, job: Job, conn: Any = None) -> None:
        run = _RUN.get()
        if run is None or run[1].job.id != job.id:
            raise RuntimeError(
                f"job.transaction() works only inside the handler that runs job {job.id}, "
                "while it runs (not on a job read from a client)"
            )
        self._completions, self._lease = run
        self._broker = _capable(self._completions.broker)
        self._conn = conn
        self.result: Any = None
        """The job's result, stored with the ack (the handler's return value is not: the job
        is completed before the handler returns)."""
        self._open: AbstractAsyncContextManager[AckTransaction] | None = None
        self._open_sync: AbstractContextManager[AckTransactionSync] | None = None

    def _result_json(self) -> str | None:
        return self._completions.encode(self._lease.job, self.result)

    def _lost(self) -> LeaseLost:
        return LeaseLost(
            f"job {self._lease.job.id}: the lease was lost before the commit (the job was taken "
            "back, cancelled or completed elsewhere); its transaction was rolled back"
        )

    # -- async handlers ---------------------------------------------------------------

    async def __aenter__(self) -> Any:
        self._completions.opening(self._lease)
        try:
            self._open = self._broker.ack_transaction(self._conn)
            self._tx = await self._open.__aenter__()
        except BaseException:
            self._completions.closed(self._lease)
            raise
        return self._tx.connection

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._open is not None
        try:
            if exc is not None:
                return await self._open.__aexit__(kind, exc, tb)  # rolls back
            # A cancel (the timeout's, a drain's) that lands while the ack and commit run must
            # not leave their outcome unknown: it waits for them, then goes on cancelling.
            ending = asyncio.ensure_future(self._commit())
            try:
                await asyncio.shield(ending)
            except asyncio.CancelledError:
                await asyncio.wait({ending})
                if not ending.cancelled():
                    ending.exception()  # retrieved: the cancel is what the handler sees
                raise
            return None
        finally:
            self._completions.closed(self._lease)

    async def _commit(self) -> None:
        assert self._open is not None
        try:
            self._completions.committing(self._lease)
            self._completions.settling(self._lease)
            if not await self._tx.ack(self._lease, self._result_json()):
                raise self._lost()
        except BaseException as failure:
            await self._open.__aexit__(type(failure), failure, failure.__traceback__)
            raise
        await self._open.__aexit__(None, None, None)  # commits
        self._completions.committed.add(run_of(self._lease))

    # -- sync handlers ------------------------------------------------------------------

    def __enter__(self) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise TypeError("in an async handler use 'async with job.transaction()'")
        self._completions.opening(self._lease)
        try:
            self._open_sync = self._broker.ack_transaction_sync(self._conn)
            self._tx_sync = self._open_sync.__enter__()
        except BaseException:
            self._completions.closed(self._lease)
            raise
        return self._tx_sync.connection

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._open_sync is not None
        try:
            if exc is not None:
                return self._open_sync.__exit__(kind, exc, tb)
            try:
                self._completions.committing(self._lease)  # refused once the timeout struck
                self._completions.settling(self._lease)
                if not self._tx_sync.ack(self._lease, self._result_json()):
                    raise self._lost()
            except BaseException as failure:
                self._open_sync.__exit__(type(failure), failure, failure.__traceback__)
                raise
            self._open_sync.__exit__(None, None, None)
            # set.add from the handler thread: atomic under the GIL
            self._completions.committed.add(run_of(self._lease))
            return None
        finally:
            self._completions.closed(self._lease)
