"""Faults the Redis broker must ride out: a flushed script cache, killed connections, a
server restart mid-run, and a server that is not there. Each runs on a private server."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

import pqueue
from pqueue.broker import Claimer, FullBroker
from pqueue.errors import BrokerUnavailable
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from tests.integration.redis.servers import PrivateRedis

pytestmark = pytest.mark.redis

PREFIX = "pqfault"


async def _open(server: PrivateRedis, **options: object) -> FullBroker:
    broker = pqueue.connect(f"{server.url}?prefix={PREFIX}", **options)
    await broker.open()
    return broker


async def _admin(server: PrivateRedis) -> Redis:
    return Redis.from_url(server.url, decode_responses=True)


async def _kill_clients(server: PrivateRedis, name_part: str) -> int:
    """CLIENT KILL every connection whose name contains ``name_part``; returns how many."""
    admin = await _admin(server)
    try:
        clients = await admin.client_list()
        ids = [c["id"] for c in clients if name_part in c.get("name", "")]
        for client_id in ids:
            await admin.execute_command("CLIENT", "KILL", "ID", client_id)
        return len(ids)
    finally:
        await admin.aclose()


@pytest.mark.asyncio
async def test_scripts_are_reloaded_after_script_flush(private_redis: PrivateRedis) -> None:
    broker = await _open(private_redis)
    admin = await _admin(private_redis)
    try:
        await broker.enqueue([build_spec("t", 1)])
        await admin.script_flush()
        # one script call (run path) and a pipelined batch over two queues (run_many path)
        [single] = await broker.enqueue([build_spec("t", 2)])
        batch = await broker.enqueue([build_spec("t", i, queue=f"q{i % 2}") for i in range(4)])
        assert single.created and all(r.created for r in batch)
        await admin.script_flush()
        leases = await broker.claim(["default", "q0", "q1"], worker_id="w", limit=10, lease_for=30)
        assert len(leases) == 6
        await admin.script_flush()
        assert await broker.ack(leases) == [True] * 6
    finally:
        await admin.aclose()
        await broker.close()


@pytest.mark.asyncio
async def test_operations_reconnect_after_client_kill(private_redis: PrivateRedis) -> None:
    broker = await _open(private_redis)
    try:
        ids = [r.id for r in await broker.enqueue([build_spec("t", i) for i in range(3)])]
        assert await _kill_clients(private_redis, f"pqueue:{PREFIX}:") >= 1
        [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
        assert lease.job.id == ids[0]
        assert await _kill_clients(private_redis, f"pqueue:{PREFIX}:") >= 1
        assert await broker.ack([lease]) == [True]
        assert (await broker.get_job(ids[0])).status is JobStatus.COMPLETED
    finally:
        await broker.close()


@pytest.mark.asyncio
async def test_wakeups_resume_after_the_listener_connection_is_killed(private_redis: PrivateRedis) -> None:
    waiter_broker = await _open(private_redis)
    producer = await _open(private_redis)
    try:
        assert await waiter_broker.wait_for_jobs(["default"], timeout=0.05) is False  # listener up
        assert await _kill_clients(private_redis, f"pqueue:{PREFIX}:") >= 2
        waiter = asyncio.create_task(waiter_broker.wait_for_jobs(["default"], timeout=30))
        await asyncio.sleep(1.0)  # the listener notices the kill and subscribes again
        await producer.enqueue([build_spec("t")])
        # woken by the push, not by the 30 s timeout
        assert await asyncio.wait_for(waiter, 10) is True
    finally:
        await producer.close()
        await waiter_broker.close()


@pytest.mark.asyncio
async def test_a_parked_claimer_whose_listener_was_killed_still_gets_the_job(
    private_redis: PrivateRedis,
) -> None:
    waiter_broker = await _open(private_redis)
    producer = await _open(private_redis)
    claimer = Claimer("w", limit=4, lease_for=30)
    try:
        assert await waiter_broker.wait_for_jobs(["default"], timeout=0.05, claimer=claimer) is False
        waiter = asyncio.create_task(waiter_broker.wait_for_jobs(["default"], timeout=30, claimer=claimer))
        await asyncio.sleep(0.2)  # parked
        assert await _kill_clients(private_redis, f"pqueue:{PREFIX}:") >= 2
        [result] = await producer.enqueue([build_spec("t")])  # while the listener is down
        # either handed off (if it resubscribed first) or left pending and announced on resubscribe
        assert await asyncio.wait_for(waiter, 10) is True
        leases = await waiter_broker.claim(["default"], worker_id="w", limit=4, lease_for=30)
        assert [lease.job.id for lease in leases] == [result.id]
    finally:
        await producer.close()
        await waiter_broker.close()


@pytest.mark.asyncio
async def test_restart_mid_run_costs_a_reconnect_not_a_job(private_redis: PrivateRedis) -> None:
    """A worker-like loop keeps claiming and acking while the server restarts (with AOF)."""
    broker = await _open(private_redis)
    total = 600
    try:
        ids = {r.id for r in await broker.enqueue([build_spec("t", i) for i in range(total)])}
        acked: set[str] = set()
        restart: asyncio.Task[None] | None = None

        async def start_later() -> None:
            await asyncio.sleep(0.3)
            await asyncio.to_thread(private_redis.start)

        async def worker() -> None:
            nonlocal restart
            while len(acked) < total:
                await broker.recover()  # jobs whose claim reply was lost come back after 1 s
                leases = await broker.claim(["default"], worker_id="w", limit=20, lease_for=1.0)
                if not leases:
                    await asyncio.sleep(0.05)
                    continue
                await broker.ack(leases)  # a reply lost in the restart may report False
                acked.update(lease.job.id for lease in leases)
                if len(acked) >= total // 3 and restart is None:
                    # the server goes down, and comes back while the loop keeps calling it
                    await asyncio.to_thread(private_redis.stop)
                    restart = asyncio.create_task(start_later())

        await asyncio.wait_for(worker(), 60)
        assert restart is not None
        await restart
        assert acked == ids
        counts = (await broker.counts())["default"]
        assert counts[JobStatus.COMPLETED] == total
        assert counts[JobStatus.PENDING] == counts[JobStatus.ACTIVE] == 0
    finally:
        await broker.close()


@pytest.mark.asyncio
async def test_unreachable_server_is_broker_unavailable(private_redis: PrivateRedis) -> None:
    broker = await _open(private_redis, retries=1)
    try:
        private_redis.stop()
        with pytest.raises(BrokerUnavailable):
            await broker.enqueue([build_spec("t")])
        with pytest.raises(BrokerUnavailable):
            await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    finally:
        await broker.close()
    never = pqueue.connect(f"{private_redis.url}?prefix={PREFIX}&retries=0")
    with pytest.raises(BrokerUnavailable):
        await never.open()
