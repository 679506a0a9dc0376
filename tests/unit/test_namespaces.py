"""pqueue.brokers.namespaces: the DSN of a namespace, per backend, and the names it takes.
Nothing connects here (tests/integration/test_namespaces.py makes and drops real ones)."""

from __future__ import annotations

import pytest

from pqueue.brokers.namespaces import namespace, valid_name, with_parameter
from pqueue.errors import ConfigError

CASES = [
    # Redis: ?prefix= replaced, the password's escapes and the other parameters kept as written
    (
        "redis://app:p%40ss%3Aw%2Fd%3F@10.0.0.5:6380/2?prefix=prod&socket_timeout=5",
        "redis://app:p%40ss%3Aw%2Fd%3F@10.0.0.5:6380/2?socket_timeout=5&prefix=pqns",
    ),
    ("redis://127.0.0.1:6379/3", "redis://127.0.0.1:6379/3?prefix=pqns"),
    ("redis://127.0.0.1?prefix=a&prefix=b", "redis://127.0.0.1?prefix=pqns"),
    (
        "rediss://:s3cr%23t@cache.example:6380/0?ssl_ca_certs=/etc/ca.pem&prefix=x",
        "rediss://:s3cr%23t@cache.example:6380/0?ssl_ca_certs=/etc/ca.pem&prefix=pqns",
    ),
    (
        "redis+cluster://u:p%26q@10.0.0.1:7000,10.0.0.2:7000/?prefix=old&retries=3",
        "redis+cluster://u:p%26q@10.0.0.1:7000,10.0.0.2:7000/?retries=3&prefix=pqns",
    ),
    # Postgres: ?schema= replaced, libpq's parameters and pqueue's others kept
    (
        "postgresql://app:p%40ss%3Aw%2F@db.example:5433/jobs?schema=prod&sslmode=disable&pool_max=4",
        "postgresql://app:p%40ss%3Aw%2F@db.example:5433/jobs?sslmode=disable&pool_max=4&schema=pqns",
    ),
    ("postgres://postgres@127.0.0.1/test", "postgres://postgres@127.0.0.1/test?schema=pqns"),
    # SQLite: <name>.db beside the file, spelled as given
    ("sqlite:////var/lib/app/pqueue.db?busy_timeout=5", "sqlite:////var/lib/app/pqns.db?busy_timeout=5"),
    ("sqlite:///pqueue.db", "sqlite:///pqns.db"),
    ("sqlite:///data/my%20jobs.db", "sqlite:///data/pqns.db"),
    # memory: the store's name
    ("memory://", "memory://pqns"),
    ("memory://default?retention=5", "memory://pqns?retention=5"),
]


@pytest.mark.parametrize(("dsn", "expected"), CASES)
def test_a_namespace_dsn_changes_only_what_names_the_namespace(dsn: str, expected: str) -> None:
    made = namespace(dsn, "pqns")
    assert (made.name, made.dsn) == ("pqns", expected)


@pytest.mark.parametrize(
    "name", ["", "Upper", "a-b", "a:b", "a.b", "a b", "1abc", "_x", "a" * 49, "x{y}", "a*", "é"]
)
def test_a_name_that_is_no_short_safe_identifier_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="invalid namespace name"):
        namespace("redis://127.0.0.1/0", name)


@pytest.mark.parametrize("name", ["pqueue", "public", "default", "information_schema", "pg_temp", "pg_x"])
def test_a_name_that_is_a_deployments_own_data_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="reserved"):
        namespace("postgresql://postgres@127.0.0.1/test", name)


def test_the_longest_name_is_taken() -> None:
    assert valid_name("a" * 48) == "a" * 48


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("not a dsn", "no namespaces"),
        ("amqp://host/", "no namespaces"),
        ("redis://h:6379/0?prefx=a", "unknown DSN parameter 'prefx'"),
        ("postgresql://h/db?shema=a", "unknown DSN parameter 'shema'"),
        ("sqlite://host/x.db", "names a host"),
        ("redis+cluster://h:7000/1", "database 0 only"),
    ],
)
def test_a_dsn_the_backend_refuses_is_refused_here(dsn: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        namespace(dsn, "pqns")


def test_the_message_of_a_refused_dsn_carries_no_password() -> None:
    with pytest.raises(ConfigError) as refused:
        namespace("amqp://user:hunter2@host/", "pqns")
    assert "hunter2" not in str(refused.value)


def test_with_parameter_keeps_the_rest_of_the_query_byte_for_byte() -> None:
    assert with_parameter("x://h/?a=%2F&b=&c", "b", "v") == "x://h/?a=%2F&c&b=v"
    assert with_parameter("x://h/", "k", "v") == "x://h/?k=v"
