"""A namespace made, used and dropped on each backend's real server leaves nothing of its
own behind (Redis: no key under its prefix; Postgres: no schema; SQLite: no file), and a
namespace whose name starts with the same letters keeps its jobs."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

import pqueue
from pqueue.brokers.namespaces import Namespace, namespace
from pqueue.task import Task
from tests.conftest import service_url


def _names() -> tuple[str, str]:
    """A name, and a second one that extends it (``<name>x``: its prefix starts the same)."""
    name = f"pqns{uuid.uuid4().hex[:10]}"
    return name, name + "x"


async def _use(space: Namespace) -> None:
    """Four jobs in two queues, with a unique key and an idempotency key (their own keys)."""
    await space.create()
    async with pqueue.AsyncClient(space.dsn) as client:
        await client.enqueue("ns:job", {"n": 1}, queue="nsq", unique_key="u", unique_for=60)
        await client.enqueue("ns:job", {"n": 2}, queue="nsq", delay=60, idempotency_key="i")
        await client.enqueue_many([Task("ns:job", {"n": 3}, queue="other"), Task("ns:job", {"n": 4})])


async def _jobs(space: Namespace) -> int:
    async with pqueue.AsyncClient(space.dsn) as client:
        return sum((await client.stats()).totals.values())


async def _drop_one_keep_the_other(dsn: str) -> Namespace:
    """Make two namespaces, drop the first: the second keeps its jobs. Returns the first."""
    name, longer = _names()
    dropped, kept = namespace(dsn, name), namespace(dsn, longer)
    await _use(dropped)
    await _use(kept)
    try:
        await dropped.drop()
        assert await _jobs(kept) == 4
    finally:
        await kept.drop()
    return dropped


async def test_memory() -> None:
    dropped = await _drop_one_keep_the_other("memory://")
    assert await _jobs(dropped) == 0


@pytest.mark.redis
async def test_redis() -> None:
    url = service_url("redis")
    assert url is not None
    dropped = await _drop_one_keep_the_other(url)
    async with Redis.from_url(url) as raw:
        assert [k async for k in raw.scan_iter(match=f"{dropped.name}*")] == []


@pytest.mark.redis_cluster
async def test_redis_cluster() -> None:
    url = service_url("redis_cluster")
    assert url is not None
    dropped = await _drop_one_keep_the_other(url)
    host, port = url.removeprefix("redis+cluster://").split(",")[0].split("/")[0].split(":")
    raw = RedisCluster(host=host, port=int(port))
    try:
        assert [k async for k in raw.scan_iter(match=f"{dropped.name}*")] == []
    finally:
        await raw.aclose()


@pytest.mark.postgres
async def test_postgres() -> None:
    url = service_url("postgres")
    assert url is not None
    dropped = await _drop_one_keep_the_other(url)
    async with await psycopg.AsyncConnection.connect(url) as conn:
        rows = await (
            await conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", [f"{dropped.name}%"])
        ).fetchall()
    assert rows == []


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def test_sqlite(tmp_path: Path) -> None:
    (tmp_path / "unrelated.txt").write_text("kept")
    dropped = await _drop_one_keep_the_other(f"sqlite:///{tmp_path}/pqueue.db")
    assert _files(tmp_path) == ["unrelated.txt"]
    assert dropped.dsn == f"sqlite:///{tmp_path}/{dropped.name}.db"
