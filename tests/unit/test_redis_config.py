"""``redis://`` DSN options and the Redis codec, without a server."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest

pytest.importorskip("redis")

from pqueue.brokers import connect
from pqueue.brokers.redis import RedisBroker
from pqueue.brokers.redis.codec import decode_job, enqueue_header
from pqueue.brokers.redis.config import RedisOptions
from pqueue.errors import ConfigError, CorruptJob
from pqueue.job import JobStatus
from pqueue.limits import Limit
from pqueue.spec import build_spec


def test_own_options_are_taken_and_the_rest_passed_to_redis_py() -> None:
    opts = RedisOptions.parse(
        "rediss://u:pw@h:7000/2?prefix=app:jobs&retention=60&ssl_cert_reqs=none&pool_size=4", {}
    )
    assert (opts.prefix, opts.retention, opts.pool_size) == ("app:jobs", 60.0, 4)
    assert opts.url == "rediss://u:pw@h:7000/2?ssl_cert_reqs=none"


def test_keyword_options_override_the_dsn() -> None:
    broker = connect("redis://h/0?retention=60", retention=0, prefix="p2")
    assert isinstance(broker, RedisBroker)
    assert (broker.options.retention, broker.options.prefix) == (0.0, "p2")


@pytest.mark.parametrize(
    ("dsn", "options"),
    [
        ("redis://h/0?retention=-1", {}),
        ("redis://h/0?retention=soon", {}),
        ("redis://h/0?pool_size=0", {}),
        ("redis://h/0?prefix=a{b}", {}),
        ("redis://h/0", {"colour": "blue"}),
        ("http://h/0", {}),
    ],
)
def test_bad_options_are_a_config_error(dsn: str, options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RedisOptions.parse(dsn, options)


def test_enqueue_header_sends_shared_values_once_and_omits_unused_options() -> None:
    specs = [build_spec("t", i) for i in range(3)]
    header = json.loads(enqueue_header(specs))
    assert header["type"] == "t" and header["max_retries"] == 3
    assert header["payload"] == ["0", "1", "2"]
    assert not {"run_at", "delay", "timeout", "unique_key", "meta"} & set(header)
    mixed = json.loads(enqueue_header([build_spec("a", delay=1.5), build_spec("b", max_retries=9)]))
    assert mixed["type"] == ["a", "b"] and mixed["max_retries"] == [3, 9] and mixed["delay"] == [1500, None]


@pytest.mark.parametrize(
    ("options", "column", "value"),
    [
        ({"delay": 2}, "delay", 2000),
        ({"run_at": datetime(2030, 1, 1, tzinfo=UTC)}, "run_at", 1893456000000),
        ({"timeout": 1.5}, "timeout", "1.5"),
        ({"unique_for": 3, "unique_key": "k"}, "unique_key", "k"),
        ({"unique_for": 3, "unique_key": "k"}, "unique_for", 3000),
        ({"idempotency_key": "i"}, "idempotency_key", "i"),
        ({"meta": {"a": "b"}}, "meta", '{"a":"b"}'),
        ({"limit": Limit("acme", rate=5.0)}, "limit_key", "acme"),
        ({"limit": Limit("acme", concurrency=2)}, "limit", "- 1.0 2"),
    ],
)
def test_an_optional_column_travels_when_any_job_sets_it(
    options: dict[str, object], column: str, value: object
) -> None:
    """A plain job beside one that sets the option gets null in that column; a batch of
    plain jobs sends no optional column at all."""
    header = json.loads(enqueue_header([build_spec("t"), build_spec("t", **options)]))  # type: ignore[arg-type]
    assert header[column] == [None, value]
    assert set(json.loads(enqueue_header([build_spec("t")]))) == {
        "id", "payload", "type", "max_retries", "max_recoveries"
    }  # fmt: skip


def test_a_lone_surrogate_travels_as_an_escape() -> None:
    # build_spec refuses such text; a JobSpec made by hand must still not break the wire.
    spec = dataclasses.replace(build_spec("t"), payload_json='"x\ud800"')
    header = enqueue_header([spec])
    header.encode("utf-8")  # sendable
    assert json.loads(json.loads(header)["payload"][0]) == "x\ud800"


GOOD = {
    "type": "t",
    "payload": '{"a":1}',
    "status": "pending",
    "run_at": "1800000000000",
    "created_at": "1800000000000",
    "max_retries": "3",
    "max_recoveries": "5",
}


def test_decode_job_reads_a_well_formed_hash() -> None:
    job = decode_job("id", "q", GOOD)
    assert (job.payload, job.status, job.attempt, job.errors) == ({"a": 1}, JobStatus.PENDING, 0, ())


@pytest.mark.parametrize(
    "change",
    [
        {"payload": "{"},
        {"status": "lost"},
        {"run_at": "soon"},
        {"type": None},
        {"errors": "[1]"},
        {"meta": "[]"},
    ],
)
def test_decode_job_reports_malformed_hashes(change: dict[str, str | None]) -> None:
    fields = {**GOOD, **change}
    with pytest.raises(CorruptJob, match="id"):
        decode_job("id", "q", {k: v for k, v in fields.items() if v is not None})


def test_redis_py_options_pass_through_and_tls_ones_need_rediss() -> None:
    opts = RedisOptions.parse("redis://h/0?socket_timeout=5&db=2&socket_connect_timeout=1&prefix=p", {})
    assert opts.url == "redis://h/0?socket_timeout=5&db=2&socket_connect_timeout=1"
    with pytest.raises(ConfigError, match=r"unknown DSN parameter 'ssl_ca_certs'.*need a rediss:// DSN"):
        RedisOptions.parse("redis://h/0?ssl_ca_certs=/ca.pem", {})


@pytest.mark.parametrize(
    "setting", ["max_connections", "decode_responses", "client_name", "health_check_interval"]
)
def test_settings_pqueue_makes_itself_cannot_be_overridden_from_the_dsn(setting: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown DSN parameter '{setting}'"):
        RedisOptions.parse(f"redis://h/0?{setting}=1", {})


def test_driver_options_are_refused_as_keywords_with_a_pointer_to_the_dsn() -> None:
    with pytest.raises(ConfigError, match=r"unknown keyword option 'socket_timeout'.* go in the DSN"):
        RedisOptions.parse("redis://h/0", {"socket_timeout": 5})
