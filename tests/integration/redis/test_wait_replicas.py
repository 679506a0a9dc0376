"""``wait_replicas`` on one server without replicas: the enqueue is written, unconfirmed,
and says so in one line; a retry by job id stores nothing twice (ADR 0143)."""

from __future__ import annotations

import uuid

import pytest

from pqueue.errors import BrokerUnreachable
from pqueue.spec import build_spec
from tests.integration.redis.conftest import OpenRedis

pytestmark = pytest.mark.redis


async def test_an_enqueue_no_replica_confirms_raises_and_is_stored_once(open_redis: OpenRedis) -> None:
    confirming = await open_redis(wait_replicas=1)
    plain = await open_redis()
    spec = build_spec("t", 1, queue="default", job_id=str(uuid.uuid4()))
    with pytest.raises(BrokerUnreachable) as info:
        await confirming.enqueue([spec])
    assert "only 0 of the 1 replicas" in str(info.value) and "\n" not in str(info.value)
    [again] = await plain.enqueue([spec])
    assert not again.created
    assert (await plain.get_job(spec.id)).payload == 1
