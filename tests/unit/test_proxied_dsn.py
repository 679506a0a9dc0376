"""pqueue.chaos.proxy's DSN rules: where a TCP proxy can stand in for the broker's address,
the DSN keeps everything but its host and port; where it cannot, the answer is None."""

from __future__ import annotations

import pytest

from pqueue.chaos.proxy import proxied_dsn, upstream_of
from pqueue.errors import ConfigError

ROUTED = [
    (
        "redis://app:p%40ss%3Aw%2Fd%3F%23@10.0.0.5:6380/2?prefix=pq&socket_timeout=5",
        "redis://app:p%40ss%3Aw%2Fd%3F%23@127.0.0.1:7777/2?prefix=pq&socket_timeout=5",
        ("10.0.0.5", 6380),
    ),
    ("redis://cache.internal", "redis://127.0.0.1:7777", ("cache.internal", 6379)),
    ("redis://:only-a-password@h?prefix=x", "redis://:only-a-password@127.0.0.1:7777?prefix=x", ("h", 6379)),
    ("REDIS://[::1]:6390/0", "REDIS://127.0.0.1:7777/0", ("::1", 6390)),
    (
        "postgresql://app:p%40ss%3Aw%2F%3F@db.example:5433/jobs?schema=s&sslmode=prefer&application_name=a",
        "postgresql://app:p%40ss%3Aw%2F%3F@127.0.0.1:7777/jobs?schema=s&sslmode=prefer&application_name=a",
        ("db.example", 5433),
    ),
    ("postgres://postgres@127.0.0.1/test", "postgres://postgres@127.0.0.1:7777/test", ("127.0.0.1", 5432)),
    ("postgresql://u@h/db?sslmode=disable", "postgresql://u@127.0.0.1:7777/db?sslmode=disable", ("h", 5432)),
]


@pytest.mark.parametrize(("dsn", "proxied", "upstream"), ROUTED)
def test_the_proxied_dsn_changes_only_the_host_and_port(
    dsn: str, proxied: str, upstream: tuple[str, int]
) -> None:
    assert proxied_dsn(dsn, 7777) == proxied
    assert upstream_of(dsn) == upstream


@pytest.mark.parametrize(
    "dsn",
    [
        "memory://",
        "memory://store",
        "sqlite:///pqueue.db",
        "sqlite:////var/lib/pqueue.db",
        "redis+cluster://127.0.0.1:7000,127.0.0.1:7001/",
        "redis+cluster://127.0.0.1:7000/",
        "rediss+cluster://127.0.0.1:7000/",
        "rediss://cache.example:6380/0",
        "postgresql://u@h/db?sslmode=require",
        "postgresql://u@h/db?sslmode=verify-ca",
        "postgresql://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem",
        "postgresql://u@h/db?ssl=true",
        "postgresql:///db?host=/var/run/postgresql",
        "postgresql://%2Fvar%2Frun%2Fpostgresql/db",
        "postgresql:///db",
        "postgresql://u@h1:5432,h2:5432/db",
        "postgresql://u@h/db?hostaddr=10.0.0.9",
        "postgresql://u@h/db?port=5433",
        "amqp://h/",
        "not a dsn",
        "redis://h:notaport/0",
    ],
)
def test_no_proxy_where_a_tcp_proxy_cannot_stand_in(dsn: str) -> None:
    assert proxied_dsn(dsn, 7777) is None
    with pytest.raises(ConfigError, match="no TCP proxy can stand in"):
        upstream_of(dsn)


def test_the_reason_names_no_password() -> None:
    with pytest.raises(ConfigError) as refused:
        upstream_of("postgresql://u:hunter2@h1,h2/db")
    assert "hunter2" not in str(refused.value)
    assert "several hosts" in str(refused.value)
