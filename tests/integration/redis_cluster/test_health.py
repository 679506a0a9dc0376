"""What ends an outage on a Redis Cluster: a reply that touched a queue's slot, not a
keyless one. Found by the cluster restart test: while the master of the queue's slot was
down, ``now()`` (``TIME``, sent to any node) got a reply, the worker logged the cluster
'back', and the next claim logged it 'lost' again. On the session's cluster."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("redis")

import pqueue
from pqueue.brokers.redis import RedisBroker
from pqueue.spec import build_spec
from tests.backends import redis_cluster
from tests.conftest import service_url

pytestmark = [pytest.mark.redis_cluster, pytest.mark.asyncio]


async def test_a_keyless_reply_does_not_end_an_outage_but_a_keyed_one_does() -> None:
    url = service_url("redis_cluster")
    prefix = f"pqhealth{uuid.uuid4().hex[:10]}"
    broker = pqueue.connect(redis_cluster.namespace_dsn(url, prefix))
    assert isinstance(broker, RedisBroker)
    await broker.open()
    try:
        broker.health.lost("connection refused")  # as when the slot's master went away
        await broker.now()
        assert broker.health.down, "a TIME reply from any node ended the outage"
        await broker.enqueue([build_spec("health:job", {}, queue="q00")])
        assert not broker.health.down
    finally:
        broker.health.ok()
        await broker.close()
        await redis_cluster.cleanup(url, prefix)
