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
  completed, whatever the handler does after the block (ADR 0151).

Async handlers use ``async with``, sync handlers (run on the worker's threads) ``with``;
both find their run through a context variable the executor sets, which the copied
context of a sync handler's thread carries too.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pqueue.broker import AckTransaction, AckTransactionSync, Capability, CompletionTransactions
from pqueue.errors import LeaseLost, NotSupported

if TYPE_CHECKING:
    from pqueue.broker import FullBroker
    from pqueue.job import Job, Lease


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
        self.committed: set[tuple[str, str]] = set()
        """(job id, lease token) of runs whose handler committed their job's completion; the
        executor takes them out. The token tells a zombie run of the same job apart."""

    def take(self, lease: Lease) -> bool:
        """Whether this run completed its job in its handler's transaction (forgets it)."""
        if not self.committed:
            return False
        run = (lease.job.id, lease.token)
        if run in self.committed:
            self.committed.discard(run)
            return True
        return False


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
        self._open = self._broker.ack_transaction(self._conn)
        self._tx = await self._open.__aenter__()
        return self._tx.connection

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._open is not None
        if exc is not None:
            return await self._open.__aexit__(kind, exc, tb)  # rolls back
        try:
            self._completions.settling(self._lease)
            if not await self._tx.ack(self._lease, self._result_json()):
                raise self._lost()
        except BaseException as failure:
            await self._open.__aexit__(type(failure), failure, failure.__traceback__)
            raise
        await self._open.__aexit__(None, None, None)  # commits
        self._completions.committed.add((self._lease.job.id, self._lease.token))
        return None

    # -- sync handlers ------------------------------------------------------------------

    def __enter__(self) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise TypeError("in an async handler use 'async with job.transaction()'")
        self._open_sync = self._broker.ack_transaction_sync(self._conn)
        self._tx_sync = self._open_sync.__enter__()
        return self._tx_sync.connection

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._open_sync is not None
        if exc is not None:
            return self._open_sync.__exit__(kind, exc, tb)
        try:
            self._completions.settling(self._lease)
            if not self._tx_sync.ack(self._lease, self._result_json()):
                raise self._lost()
        except BaseException as failure:
            self._open_sync.__exit__(type(failure), failure, failure.__traceback__)
            raise
        self._open_sync.__exit__(None, None, None)
        # set.add from the handler thread: atomic under the GIL
        self._completions.committed.add((self._lease.job.id, self._lease.token))
        return None
