"""A dead limited job requeued goes back to its lane, never to the queue's own list.

``requeue_dead`` moves a queue's limited dead jobs to their lanes first, then the rest with
one script per batch. A limited job that died between the two passes was moved by the
second into the queue's own pending list, where claims take it without its limit: found by
``pqueue chaos`` (two jobs of a concurrency-1 group ran at once after a requeue). The
queue's own pass now skips limited jobs, and still reaches the plain ones behind them.
"""

from __future__ import annotations

from typing import Any

import pytest

from pqueue.brokers.redis import calls
from pqueue.clock import ManualClock
from pqueue.job import ErrorInfo, JobStatus
from pqueue.limits import explicit_limit
from pqueue.spec import build_spec
from tests.integration.redis.conftest import OpenRedis

pytestmark = pytest.mark.redis


async def dead_job(broker: Any, *, limited: bool) -> str:
    limit = explicit_limit("tenant-1", None, 1) if limited else None
    [result] = await broker.enqueue([build_spec("t:job", None, queue="q", max_retries=0, limit=limit)])
    [lease] = await broker.claim(["q"], worker_id="w", limit=1, lease_for=30)
    assert lease.job.id == result.id
    assert await broker.fail(lease, ErrorInfo("E", "boom"), retry_in=None)
    return result.id


async def test_the_queues_own_pass_leaves_limited_jobs_for_their_lane(open_redis: OpenRedis) -> None:
    broker: Any = await open_redis(clock=ManualClock(1_800_000_000.0))
    first = await dead_job(broker, limited=True)
    plain = await dead_job(broker, limited=False)
    second = await dead_job(broker, limited=True)
    channel = broker.keys.wake_channel
    # The queue's own pass alone, as if both died after the lane pass: only the plain job
    # moves, past the limited one in front of it (batches of 1, as the inspector loops).
    call = calls.requeue_dead(broker.queue("q"), broker.now_arg(), None, 1, channel)
    assert [int(n) for n in await broker.run(call)] == [0, 1]
    call = calls.requeue_dead(broker.queue("q"), broker.now_arg(), None, 1, channel, skip=1)
    assert [int(n) for n in await broker.run(call)] == [1, 0]
    assert [(await broker.get_job(j)).status for j in (first, plain, second)] == [
        JobStatus.DEAD, JobStatus.PENDING, JobStatus.DEAD,
    ]  # fmt: skip
    # The broker's requeue puts them in their lane, where concurrency 1 still holds.
    assert await broker.requeue_dead(queue="q") == 2
    claimed = {lease.job.id for lease in await broker.claim(["q"], worker_id="w", limit=10, lease_for=30)}
    assert plain in claimed and len(claimed & {first, second}) == 1
