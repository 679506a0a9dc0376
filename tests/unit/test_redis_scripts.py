"""The Redis broker's scripts and keys, checked without a server: every call passes the
KEYS and ARGV its Lua header documents, and stays inside one Redis Cluster slot."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

pytest.importorskip("redis")  # the redis extra is part of the dev install

from redis.crc import key_slot

from pqueue.brokers.redis import calls
from pqueue.brokers.redis.keys import queue_keys, validate_prefix
from pqueue.brokers.redis.scripts import SCRIPT_NAMES, SOURCES, ScriptCall
from pqueue.errors import ConfigError
from pqueue.job import ErrorInfo, Job, JobStatus, Lease
from pqueue.spec import build_spec

K = queue_keys("pq:test", "emails.v2")
NOW = "1800000000000"


def _lease(job_id: str) -> Lease:
    from datetime import UTC, datetime

    when = datetime.now(UTC)
    job = Job(job_id, "t", "emails.v2", None, JobStatus.ACTIVE, 1, 3, 0, 5, when, when)
    return Lease(job, "7", 0.0)


SPECS = [build_spec("t", 1, queue="emails.v2"), build_spec("t", 2, queue="emails.v2", unique_for=5)]
LEASES = [_lease(s.id) for s in SPECS]

CALLS: dict[str, ScriptCall] = {
    "enqueue": calls.enqueue(K, SPECS, NOW, "pq:test:wake", "pq:test:handoff:"),
    "claim": calls.claim(K, NOW, 10, 30_000, "w", parking="h w"),
    "park": calls.park(K, NOW, "h1 w", limit=10, lease_ms=30_000, park_ms=1_000),
    "ack": calls.ack(K, NOW, 1000, LEASES, [None, "1"], results_channel="r"),
    "fail": calls.fail(
        K,
        NOW,
        job_id=SPECS[0].id,
        token="7",
        error=ErrorInfo("E", "m"),
        retry_ms=5,
        channel="c",
        results_channel="r",
    ),
    "release": calls.release(K, NOW, 0, LEASES, "c", note=ErrorInfo("E", "note")),
    "extend": calls.extend(K, NOW, 30_000, LEASES),
    "recover": calls.recover(K, NOW, 100, "c", "r"),
    "promote": calls.promote(K, NOW, 100, "c"),
    "cancel": calls.cancel(K, NOW, SPECS[0].id, 1000, "r"),
    "requeue_dead": calls.requeue_dead(K, NOW, None, 100, "c"),
    "purge_dead": calls.purge_dead(K, None, 100),
    "prune": calls.prune(K, NOW, 1000, 100),
    "activity": calls.activity(K, NOW, 60000),
    "idempotency_begin": calls.idempotency_begin("pq:test:idem:k", NOW, "owner", 1000),
    "idempotency_end": calls.idempotency_end("pq:test:idem:k", NOW, "owner", True, 1000),
    "schedules_register": calls.schedules_register("pq:test:schedules", NOW, 60_000, 1000, []),
    "schedules_mark": calls.schedules_mark("pq:test:schedules", "nightly", 1_800_000_000_000),
    "pause": calls.pause(K, NOW),
    "resume": calls.resume(K, NOW, "pq:test:wake"),
    "cancel_active": calls.cancel_active(
        K,
        NOW,
        SPECS[0].id,
        retention_ms=1000,
        reason=ErrorInfo("Cancelled", "m"),
        channel="c",
        results_channel="r",
    ),
    "enqueue_waiting": calls.enqueue_waiting(
        K, NOW, [build_spec("t", 3, queue="emails.v2", depends_on=[SPECS[0].id])]
    ),
    "link": calls.link(K, NOW, {SPECS[0].id: ["other " + SPECS[1].id]}),
    "settle": calls.settle(
        K,
        NOW,
        parent_id=SPECS[0].id,
        parent_status="completed",
        parent_result="1",
        retention_ms=1000,
        channel="c",
        results_channel="r",
        children=[],
    ),
    "watch": calls.watch(K, NOW, SPECS[0].id),
}


def _header(name: str) -> str:
    text = (files("pqueue.brokers.redis") / "lua" / f"{name}.lua").read_text()
    return "\n".join(line for line in text.splitlines() if line.startswith("--"))


def test_every_script_has_a_call_builder_and_a_header() -> None:
    assert set(CALLS) == set(SCRIPT_NAMES)
    for name in SCRIPT_NAMES:
        header = _header(name)
        assert header.startswith(f"-- {name}.lua: "), name
        for part in ("KEYS[1]", "ARGV[1]", "Returns:", "Errors:"):
            assert part in header, f"{name}.lua header lacks {part}"
        assert SOURCES[name].startswith("-- _lib.lua")  # the prelude comes first


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_calls_pass_the_keys_and_args_the_header_documents(name: str) -> None:
    header = _header(name)
    fixed_keys = [int(n) for n in re.findall(r"^-- KEYS\[(\d+)\]", header, re.M)]
    fixed_args = [int(n) for n in re.findall(r"^-- ARGV\[(\d+)\]", header, re.M)]
    call = CALLS[name]
    extra_keys = 1 if name == "enqueue" else 0  # SPECS[1] has a unique key: KEYS[7+k]
    assert fixed_keys == list(range(1, len(fixed_keys) + 1))
    assert len(call.keys) == len(fixed_keys) + extra_keys, name
    assert len(call.args) == len(fixed_args), name


@pytest.mark.parametrize("name", [n for n in SCRIPT_NAMES if not n.startswith(("idempotency", "schedules"))])
def test_every_key_a_call_touches_is_in_one_cluster_slot(name: str) -> None:
    call = CALLS[name]
    derived = [a for a in call.args if isinstance(a, str) and a.endswith((":job:", ":deps:"))]
    slots = {key_slot(k.encode()) for k in [*call.keys, *(p + "x" for p in derived)]}
    assert slots == {key_slot(b"{emails.v2}")}, name


def test_the_hash_tag_is_always_the_queue() -> None:
    keys = queue_keys("a:b-c.d", "q")
    for value in (keys.pending, keys.job("id"), keys.unique("{weird}:key")):
        assert value.startswith("a:b-c.d:{q}:")
        assert key_slot(value.encode()) == key_slot(b"q")


@pytest.mark.parametrize("prefix", ["", "a{b}", "a*", "a b", "a::b", ":a", "x" * 101, "a?"])
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(ConfigError):
        validate_prefix(prefix)
