"""``wait_replicas`` (ADR 0143, 0159) on private servers: ``open`` refuses more replicas
than the server has, in one line naming both numbers and writing nothing; a write that a
replica dropped since then is stored and raises :class:`NotReplicated` naming its jobs
(never "unreachable"), the same through the sync Client, and a retry with those ids
stores nothing twice."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

import pqueue
from pqueue.brokers.redis import RedisBroker
from pqueue.errors import BrokerUnavailable, BrokerUnreachable, ConfigError, NotReplicated
from pqueue.spec import build_spec
from tests.integration.redis.servers import PrivateRedis, Replicated, command

pytestmark = pytest.mark.redis


async def test_open_refuses_more_replicas_than_connected_and_writes_nothing(
    private_redis: PrivateRedis,
) -> None:
    broker = pqueue.connect(private_redis.url + "?prefix=pqwait", wait_replicas=1)
    with pytest.raises(ConfigError) as refused:
        await broker.open()
    assert str(refused.value) == (
        f"wait_replicas=1 but Redis at 127.0.0.1:{private_redis.port} has 0 replicas connected: every "
        "write would be stored, then reported unconfirmed; lower wait_replicas to 0 or add replicas"
    )
    assert command(private_redis, "DBSIZE") == 0
    with pytest.raises(ConfigError, match=r"wait_replicas=1 but .* has 0 replicas connected"):
        await asyncio.to_thread(lambda: pqueue.Client(private_redis.url + "?wait_replicas=1").open())


async def test_a_write_a_replica_missed_names_its_jobs_and_a_retry_stores_nothing_twice(
    replicated_redis: Replicated, caplog: pytest.LogCaptureFixture
) -> None:
    dsn = replicated_redis.primary.url + "?prefix=pqwait&wait_replicas=1"
    broker = pqueue.connect(dsn)
    assert isinstance(broker, RedisBroker)
    sync_client = pqueue.Client(dsn)
    await broker.open()
    try:
        assert (await broker.enqueue([build_spec("t", 0)]))[0].created  # one replica confirms
        await asyncio.to_thread(sync_client.open)
        [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)

        replicated_redis.stop_replica()  # dropped after open: written, then unconfirmed
        specs = [build_spec("t", i, job_id=str(uuid.uuid4())) for i in (1, 2)]
        with caplog.at_level(logging.INFO, logger="pqueue"), pytest.raises(NotReplicated) as caught:
            await broker.enqueue(specs)
        error = caught.value
        assert isinstance(error, BrokerUnavailable) and not isinstance(error, BrokerUnreachable)
        assert error.job_ids == (specs[0].id, specs[1].id) and (error.wanted, error.confirmed) == (1, 0)
        message = str(error)
        assert "\n" not in message and "unreachable" not in message
        assert message.startswith(
            f"Redis at 127.0.0.1:{replicated_redis.primary.port}: written, not yet on 1 replica "
            "(0 of wait_replicas=1 confirmed within 1000 ms): "
            f"jobs {specs[0].id}, {specs[1].id}; a retry with the same job_id"
        )
        assert caplog.records == []  # no outage: the server answered
        requests = [[build_spec("t", 4)], [build_spec("t", 5), build_spec("t", 6)]]
        each = await broker.enqueue_each(requests)  # callers sharing a round trip: their own ids
        assert [e.job_ids for e in each if isinstance(e, NotReplicated)] == [
            tuple(s.id for s in specs) for specs in requests
        ]

        job_id = str(uuid.uuid4())
        with pytest.raises(NotReplicated, match=f"written, not yet on 1 replica .*: job {job_id};") as sync:
            await asyncio.to_thread(lambda: sync_client.enqueue("t", 3, job_id=job_id))
        assert sync.value.job_ids == (job_id,)

        acked = f"written, not yet on 1 replica .*: the ack of job {lease.job.id}$"
        with pytest.raises(NotReplicated, match=acked):
            await broker.ack([lease])
        assert (await broker.get_job(lease.job.id)).status is pqueue.JobStatus.COMPLETED

        replicated_redis.start_replica()
        retried = (*error.job_ids, job_id)
        again = await broker.enqueue([build_spec("t", 9, job_id=i) for i in retried])
        assert [(r.id, r.created) for r in again] == [(i, False) for i in retried]
        assert (await broker.counts())["default"]["pending"] == 6  # jobs 1 to 6, once each
    finally:
        await asyncio.to_thread(sync_client.close)
        await broker.close()
