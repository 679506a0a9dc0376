"""Idempotency keys: a successful run is remembered; a running one is exclusive."""

from __future__ import annotations

import pytest

from pqueue.broker import FullBroker, IdempotencyState
from pqueue.clock import ManualClock


@pytest.mark.asyncio
class IdempotencyContract:
    async def test_first_caller_acquires_and_others_see_in_flight(self, broker: FullBroker) -> None:
        assert await broker.idempotency_begin("charge:7", "job-a", ttl=30) is IdempotencyState.ACQUIRED
        assert await broker.idempotency_begin("charge:7", "job-b", ttl=30) is IdempotencyState.IN_FLIGHT
        assert await broker.idempotency_begin("charge:7", "job-a", ttl=30) is IdempotencyState.ACQUIRED

    async def test_done_is_remembered_for_its_ttl(self, broker: FullBroker, clock: ManualClock) -> None:
        assert await broker.idempotency_begin("k", "job-a", ttl=30) is IdempotencyState.ACQUIRED
        await broker.idempotency_end("k", "job-a", done=True, ttl=3600)
        clock.advance(3599)
        assert await broker.idempotency_begin("k", "job-b", ttl=30) is IdempotencyState.DONE
        clock.advance(1.01)
        assert await broker.idempotency_begin("k", "job-b", ttl=30) is IdempotencyState.ACQUIRED

    async def test_release_on_failure_frees_the_key(self, broker: FullBroker) -> None:
        assert await broker.idempotency_begin("k", "job-a", ttl=30) is IdempotencyState.ACQUIRED
        await broker.idempotency_end("k", "job-b", done=False, ttl=0)  # not the holder: no effect
        assert await broker.idempotency_begin("k", "job-c", ttl=30) is IdempotencyState.IN_FLIGHT
        await broker.idempotency_end("k", "job-a", done=False, ttl=0)
        assert await broker.idempotency_begin("k", "job-c", ttl=30) is IdempotencyState.ACQUIRED

    async def test_in_flight_hold_expires_when_its_holder_dies(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        assert await broker.idempotency_begin("k", "job-a", ttl=30) is IdempotencyState.ACQUIRED
        clock.advance(20)
        assert await broker.idempotency_begin("k", "job-a", ttl=30) is IdempotencyState.ACQUIRED  # refresh
        clock.advance(29)
        assert await broker.idempotency_begin("k", "job-b", ttl=30) is IdempotencyState.IN_FLIGHT
        clock.advance(1.01)
        assert await broker.idempotency_begin("k", "job-b", ttl=30) is IdempotencyState.ACQUIRED
