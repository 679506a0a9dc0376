"""Where the test suite finds Redis and Postgres, and what it does when it can't.

Order: the DSN in ``PQUEUE_TEST_REDIS_URL`` / ``PQUEUE_TEST_POSTGRES_URL`` (defaults on
127.0.0.1); if that server is unreachable and Docker runs, a testcontainers container;
otherwise the backend's tests are skipped with a loud reason -- unless
``PQUEUE_TEST_REQUIRE`` names the service (CI sets ``redis,postgres``), in which case the
run fails.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

DEFAULT_URLS = {
    "redis": "redis://127.0.0.1:6379/3",
    "postgres": "postgresql://postgres@127.0.0.1:5432/test",
}
ENV_VARS = {
    "redis": "PQUEUE_TEST_REDIS_URL",
    "postgres": "PQUEUE_TEST_POSTGRES_URL",
    "redis_cluster": "PQUEUE_TEST_REDIS_CLUSTER_URL",
}


@dataclass
class Service:
    name: str
    url: str | None
    problem: str | None = None
    container: Any = None


def required() -> set[str]:
    """Services named in PQUEUE_TEST_REQUIRE: missing ones fail the run instead of skipping."""
    return {s.strip() for s in os.environ.get("PQUEUE_TEST_REQUIRE", "").split(",") if s.strip()}


def _reachable(url: str) -> bool:
    parts = urlsplit(url)
    port = parts.port or (6379 if parts.scheme.startswith("redis") else 5432)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def _start_container(name: str) -> tuple[str, Any] | None:
    """Start a throwaway server with testcontainers when Docker is available."""
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env().ping()
    except Exception:  # noqa: BLE001 - no Docker here: the caller reports why
        return None
    if name == "redis":
        from testcontainers.redis import RedisContainer  # type: ignore[import-untyped]

        redis_box = RedisContainer("redis:7").start()
        return f"redis://{redis_box.get_container_host_ip()}:{redis_box.get_exposed_port(6379)}/0", redis_box
    from testcontainers.postgres import PostgresContainer  # type: ignore[import-untyped]

    pg_box = PostgresContainer("postgres:16", driver=None).start()
    return pg_box.get_connection_url(), pg_box


def _start_cluster() -> Service:
    """A private six-node Redis Cluster (tests/private_cluster.py), stopped at session end."""
    from tests.private_cluster import PrivateRedisCluster

    problem = PrivateRedisCluster.missing()
    if problem is not None:
        return Service("redis_cluster", None, problem=f"no private Redis Cluster: {problem}")
    cluster = PrivateRedisCluster()
    try:
        cluster.start()
    except RuntimeError as exc:
        cluster.stop()
        return Service("redis_cluster", None, problem=f"the private Redis Cluster did not start: {exc}")
    return Service("redis_cluster", cluster.url, container=cluster)


def discover(name: str) -> Service:
    """Find a server for ``name`` ('redis', 'postgres' or 'redis_cluster': the one in
    ``PQUEUE_TEST_REDIS_CLUSTER_URL``, else six private nodes started here)."""
    if name == "redis_cluster":
        given = os.environ.get(ENV_VARS[name])
        return Service(name, given) if given else _start_cluster()
    url = os.environ.get(ENV_VARS[name], DEFAULT_URLS[name])
    if _reachable(url):
        return Service(name, url)
    started = _start_container(name)
    if started is not None:
        return Service(name, started[0], container=started[1])
    return Service(
        name,
        None,
        problem=(
            f"{name} is unreachable at {url} (set {ENV_VARS[name]}) and Docker is not running "
            "for testcontainers"
        ),
    )


def require_spark() -> None:
    """Skip the calling module (loudly) when PySpark or pyarrow is missing; fail instead
    when PQUEUE_TEST_REQUIRE names spark."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        if "spark" in required():
            pytest.fail(f"PQUEUE_TEST_REQUIRE names spark, but it cannot be imported: {exc}", pytrace=False)
        pytest.skip(f'SKIPPED SPARK TESTS: {exc} (pip install "pqueue-jobs[spark]")', allow_module_level=True)
