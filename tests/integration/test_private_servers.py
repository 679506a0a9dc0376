"""pqueue.chaos.servers: a private server takes its port from the allocator it is given,
names itself by ``url`` and says whether it runs (``pqueue chaos --private-broker``). Their
restarts and crashes under workers are the restart tests' (tests/integration/*/test_restart.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from redis import Redis

from pqueue.chaos import servers
from tests.conftest import missing
from tests.ports import free_port


def test_private_redis(tmp_path: Path) -> None:
    if problem := servers.PrivateRedis.missing():
        missing("redis", problem)
    port = free_port()
    server = servers.PrivateRedis(tmp_path, port=lambda: port)
    assert (server.port, server.url) == (port, f"redis://127.0.0.1:{port}/0")
    assert not server.running
    server.start()
    try:
        assert server.running
        with Redis.from_url(server.url) as client:
            assert client.ping()
        server.kill()
        assert not server.running
        server.start()
        assert server.running
        server.stop()
        assert not server.running
    finally:
        server.kill()


def test_private_postgres() -> None:
    if problem := servers.PrivatePostgres.missing():
        missing("postgres", problem)
    port = free_port()
    server = servers.PrivatePostgres(port=lambda: port)
    try:
        assert server.url == f"postgresql://postgres@127.0.0.1:{port}/postgres"
        assert not server.running
        server.start()
        assert server.running
        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        server.kill()
        assert not server.running
    finally:
        server.remove()


def test_private_redis_cluster() -> None:
    if problem := servers.PrivateRedisCluster.missing():
        missing("redis_cluster", problem)
    ports = iter(free_port() for _ in range(6))
    cluster = servers.PrivateRedisCluster(port=lambda: next(ports))
    try:
        assert not cluster.running
        cluster.start()
        assert cluster.running
        assert cluster.url == "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in cluster.ports)
        master = cluster.master_of("{q}")
        cluster.kill(master)
        assert not cluster.running
        assert not cluster.node_running(master)
        assert all(cluster.node_running(p) for p in cluster.ports if p != master)
    finally:
        cluster.stop()


def test_the_default_port_is_a_free_loopback_port() -> None:
    port = servers.loopback_port()
    assert 0 < port < 65536
    with pytest.raises(ConnectionRefusedError):  # nothing listens there
        socket.create_connection(("127.0.0.1", port), timeout=1)
