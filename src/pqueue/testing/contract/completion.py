"""Transactional completion (``Capability.TRANSACTIONAL_COMPLETION``, ADR 0151), through the
seam alone: a backend's ``ack_transaction`` completes a job only when its transaction
commits, fenced by the lease token. Whether the handler's own writes commit with it is
proved per backend with its own kind of connection (tests/worker/test_transaction*.py).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from pqueue.broker import Capability, CompletionTransactions, FullBroker
from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.testing.contract.helpers import boom, put, status_of, take_one


class _Rollback(Exception):
    """Raised in a block to make its transaction roll back."""


def _seam(broker: FullBroker) -> CompletionTransactions:
    assert isinstance(broker, CompletionTransactions), "the capability needs ack_transaction(_sync)"
    return broker


@pytest.mark.asyncio
@pytest.mark.requires(Capability.TRANSACTIONAL_COMPLETION)
class CompletionContract:
    async def test_a_committed_transaction_completes_the_job_with_its_result(
        self, broker: FullBroker
    ) -> None:
        job_id = await put(broker)
        lease = await take_one(broker)
        async with _seam(broker).ack_transaction() as tx:
            assert await tx.ack(lease, json.dumps({"rows": 1})) is True
            assert await status_of(broker, job_id) is JobStatus.ACTIVE  # not committed yet
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.COMPLETED and job.result == {"rows": 1}
        assert await broker.ack([lease]) == [False]  # the worker's own ack is refused: no double

    async def test_a_rolled_back_transaction_leaves_the_lease_as_it_was(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        lease = await take_one(broker)
        with pytest.raises(_Rollback):
            async with _seam(broker).ack_transaction() as tx:
                assert await tx.ack(lease, None) is True
                raise _Rollback
        assert await status_of(broker, job_id) is JobStatus.ACTIVE
        assert await broker.fail(lease, boom("rolled back"), retry_in=5) is True  # the usual rules follow

    async def test_a_lost_lease_cannot_complete_in_a_transaction(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker)
        zombie = await take_one(broker, lease_for=10)
        clock.advance(11)
        assert (await broker.recover()).recovered == (job_id,)
        current = await take_one(broker)
        async with _seam(broker).ack_transaction() as tx:
            assert await tx.ack(zombie, None) is False
        assert await status_of(broker, job_id) is JobStatus.ACTIVE
        assert await broker.ack([current]) == [True]

    async def test_the_blocking_transaction_completes_from_another_thread(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        lease = await take_one(broker)

        def complete() -> bool:
            with _seam(broker).ack_transaction_sync() as tx:
                return tx.ack(lease, None)

        assert await asyncio.to_thread(complete) is True
        assert await status_of(broker, job_id) is JobStatus.COMPLETED
