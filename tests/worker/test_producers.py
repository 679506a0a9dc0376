"""Concurrent producers: threads sharing one sync Client, coroutines sharing one AsyncClient.

Their enqueues share round trips (pqueue.combine); each caller must get its own id and
result, a bad job must fail alone, and a lone caller must send at once, one round trip
per call. Runs on every backend (memory through the sync Client's loop thread).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import Any

import psycopg
import pytest
from psycopg_pool import PoolTimeout
from redis import Redis, RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError

from pqueue import AsyncClient, Client
from pqueue.broker import FullBroker
from pqueue.brokers.redis.config import RedisOptions
from pqueue.brokers.redis.keys import queue_keys
from pqueue.clock import ManualClock
from pqueue.errors import BrokerError, ClientClosed
from pqueue.job import EnqueueResult, JobSpec
from tests.conftest import only_backends

THREADS = 16


def count_round_trips(client: Client) -> list[int]:
    """Jobs per round trip of ``client``'s enqueues (its direct path, or its loop's broker)."""
    sizes: list[int] = []
    runner = client._loop_thread()
    if runner.direct is not None:
        combiner = runner.direct.combiner
        real = combiner._send

        def counting(specs: Sequence[JobSpec]) -> list[EnqueueResult]:
            sizes.append(len(specs))
            return real(specs)

        combiner._send = counting  # type: ignore[method-assign]
    else:
        broker: Any = runner.client.broker
        real_async = broker.enqueue

        async def counting_async(specs: Sequence[JobSpec]) -> list[EnqueueResult]:
            sizes.append(len(specs))
            return await real_async(specs)  # type: ignore[no-any-return]

        broker.enqueue = counting_async
    return sizes


def in_threads(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """``fn(i)`` for i in range(n), on n threads released together; results or exceptions."""
    barrier = threading.Barrier(n)

    def call(i: int) -> Any:
        barrier.wait()
        try:
            return fn(i)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return exc

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(call, range(n)))


async def test_threads_sharing_a_sync_client_each_get_their_own_job(
    broker: FullBroker, backend_dsn: str, clock: ManualClock
) -> None:
    def body() -> tuple[list[Any], list[Any], list[int]]:
        with Client(backend_dsn, clock=clock) as client:
            client.enqueue("warm")  # connect first, so the threads meet in enqueue
            trips = count_round_trips(client)
            results = in_threads(THREADS, lambda i: client.enqueue("p:job", {"i": i}))
            jobs = [client.get_job(r.id) for r in results]
            return results, jobs, trips

    results, jobs, trips = await asyncio.to_thread(body)
    assert all(isinstance(r, EnqueueResult) and r.created for r in results), results
    assert len({r.id for r in results}) == THREADS
    assert [j.payload for j in jobs] == [{"i": i} for i in range(THREADS)]
    assert sum(trips) == THREADS and 1 <= len(trips) <= THREADS


async def test_a_lone_producer_sends_each_enqueue_at_once(
    broker: FullBroker, backend_dsn: str, clock: ManualClock
) -> None:
    def body() -> list[int]:
        with Client(backend_dsn, clock=clock) as client:
            client.enqueue("warm")
            trips = count_round_trips(client)
            for i in range(5):
                client.enqueue("p:job", i)
            client.enqueue_many([])
            return trips

    assert await asyncio.to_thread(body) == [1, 1, 1, 1, 1]  # one round trip per call, none held


async def test_coroutines_sharing_an_async_client_each_get_their_own_job(
    broker: FullBroker, backend_dsn: str, clock: ManualClock
) -> None:
    async with AsyncClient(backend_dsn, clock=clock) as client:
        await client.open()
        results = await asyncio.gather(*(client.enqueue("p:job", {"i": i}) for i in range(THREADS)))
        jobs = [await client.get_job(r.id) for r in results]
    assert all(r.created for r in results) and len({r.id for r in results}) == THREADS
    assert [j.payload for j in jobs] == [{"i": i} for i in range(THREADS)]


def refuse_jobs_of_type_bad(backend_name: str, backend_dsn: str, namespace: str) -> dict[str, Any]:
    """Make the server itself refuse one kind of job (the client's checks all pass); returns
    the enqueue options that make a job bad."""
    if backend_name == "postgres":
        with psycopg.connect(backend_dsn.split("?", maxsplit=1)[0], autocommit=True) as conn:
            conn.execute(f"ALTER TABLE {namespace}.jobs ADD CONSTRAINT no_bad CHECK (type <> 'bad')")
        return {}
    if backend_name == "sqlite":
        with closing(sqlite3.connect(backend_dsn.removeprefix("sqlite:///"))) as conn:
            conn.execute(
                "CREATE TRIGGER no_bad BEFORE INSERT ON jobs WHEN NEW.type = 'bad' "
                "BEGIN SELECT RAISE(ABORT, 'no bad jobs'); END"
            )
            conn.commit()
        return {}
    # Redis: the bad job's unique key holds a list, so enqueue.lua's GET on it fails (WRONGTYPE).
    key = queue_keys(namespace, "default").unique_prefix + "bad"
    if backend_name == "redis_cluster":
        host, port = RedisOptions.parse(backend_dsn, {}).nodes[0]
        cluster = RedisCluster(host=host, port=port)
        cluster.rpush(key, "x")
        cluster.close()
        return {"unique_for": 60, "unique_key": "bad"}
    redis = Redis.from_url(backend_dsn.split("?", maxsplit=1)[0])
    redis.rpush(key, "x")
    redis.close()
    return {"unique_for": 60, "unique_key": "bad"}


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_bad_job_among_concurrent_threads_fails_alone(
    broker: FullBroker, backend_dsn: str, backend_name: str, namespace: str
) -> None:
    bad = refuse_jobs_of_type_bad(backend_name, backend_dsn, namespace)

    def body() -> tuple[list[Any], list[Any]]:
        with Client(backend_dsn) as client:
            client.enqueue("warm")

            def one(i: int) -> EnqueueResult:
                if i == 5:
                    return client.enqueue("bad", i, **bad)
                return client.enqueue("p:job", i)

            results = in_threads(THREADS, one)
            jobs = [client.get_job(r.id) for r in results if isinstance(r, EnqueueResult)]
            return results, jobs

    results, jobs = await asyncio.to_thread(body)
    assert isinstance(results[5], BrokerError) and not isinstance(results[5], EnqueueResult)
    good = [r for i, r in enumerate(results) if i != 5]
    assert all(isinstance(r, EnqueueResult) for r in good), good
    assert all(r.created for r in good)
    assert sorted(j.payload for j in jobs) == [i for i in range(THREADS) if i != 5]


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_bad_job_among_concurrent_coroutines_fails_alone(
    broker: FullBroker, backend_dsn: str, backend_name: str, namespace: str
) -> None:
    bad = refuse_jobs_of_type_bad(backend_name, backend_dsn, namespace)
    async with AsyncClient(backend_dsn) as client:
        await client.enqueue("warm")
        calls = [
            client.enqueue("bad" if i == 1 else "p:job", i, **(bad if i == 1 else {})) for i in range(THREADS)
        ]
        results = await asyncio.gather(*calls, return_exceptions=True)
        jobs = [await client.get_job(r.id) for r in results if isinstance(r, EnqueueResult)]
    assert isinstance(results[1], BrokerError)
    good = [r for i, r in enumerate(results) if i != 1]
    assert all(isinstance(r, EnqueueResult) and r.created for r in good), good
    assert sorted(j.payload for j in jobs) == [i for i in range(THREADS) if i != 1]


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_call_the_direct_path_cannot_send_goes_through_the_loop_thread(
    broker: FullBroker, backend_dsn: str, backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def body() -> tuple[list[str], list[str]]:
        with Client(backend_dsn) as client:
            client.enqueue("warm")
            transport: Any = client._loop_thread().direct.transport  # type: ignore[union-attr]
            if backend_name in ("redis", "redis_cluster"):

                def lost(commands: object) -> object:
                    raise RedisConnectionError("Connection reset by peer")

                monkeypatch.setattr(transport, "_send", lost)  # reads
                monkeypatch.setattr(transport, "_send_line", lost)  # the combiner's round trips
            elif backend_name == "sqlite":

                def locked() -> object:
                    raise sqlite3.OperationalError("database is locked")

                monkeypatch.setattr(transport, "_connection", locked)
            else:

                def busy(**_: object) -> object:
                    raise PoolTimeout("couldn't get a connection after 5.00 sec")

                monkeypatch.setattr(transport._connections(), "getconn", busy)
            first = client.enqueue("p:job", 1)  # the direct path fails: the loop thread sends it
            assert not client._loop_thread().direct.usable()  # type: ignore[union-attr]
            monkeypatch.undo()
            second = client.enqueue("p:job", 2)  # within HOP_FOR: straight to the loop thread
            return [first.id, second.id], [str(client.get_job(i).payload) for i in (first.id, second.id)]

    ids, payloads = await asyncio.to_thread(body)
    assert len(set(ids)) == 2 and payloads == ["1", "2"]


@only_backends("redis")
async def test_enqueues_keep_one_connection_and_outlive_the_server_closing_it(
    broker: FullBroker, backend_dsn: str
) -> None:
    """Redis: the combiner's round trips keep one connection (ADR 0136); when the server
    closes it, the next enqueue reconnects on the direct path instead of hopping."""

    def body() -> tuple[int, int, list[str]]:
        with Client(backend_dsn) as client:
            first = client.enqueue("p:job", 1)
            direct: Any = client._loop_thread().direct
            line = direct.transport._line_client()
            kept = line.client_id()
            second = client.enqueue("p:job", 2)
            assert line.client_id() == kept  # the same connection carried both
            Redis(connection_pool=line.connection_pool).client_kill_filter(_id=kept)
            third = client.enqueue("p:job", 3)  # the server closed it: redis-py reconnects
            assert direct.usable()  # no hop to the loop thread
            ids = (first.id, second.id, third.id)
            return kept, line.client_id(), [str(client.get_job(i).payload) for i in ids]

    kept, now, payloads = await asyncio.to_thread(body)
    assert now != kept and payloads == ["1", "2", "3"]


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_closed_client_refuses_calls_until_opened_again(broker: FullBroker, backend_dsn: str) -> None:
    def body() -> None:
        client = Client(backend_dsn)
        job = client.enqueue("p:job", 1)
        client.close()
        with pytest.raises(ClientClosed):
            client.enqueue("p:job", 2)
        with pytest.raises(ClientClosed):
            client.get_job(job.id)
        with client:
            assert client.get_job(job.id).payload == 1
            assert client.enqueue("p:job", 3).created

    await asyncio.to_thread(body)
