"""The keys Redis holds are exactly those docs/redis.md documents, with the documented
types and job hash fields, and finished data expires by TTL."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from pqueue.broker import Claimer, WorkerInfo
from pqueue.brokers.redis import calls
from pqueue.brokers.redis.broker import RedisBroker
from pqueue.brokers.redis.scripts import ScriptCall
from pqueue.clock import ManualClock
from pqueue.errors import BrokerError, CorruptJob, NotReplicated, SchemaError
from pqueue.job import UNREADABLE_TYPE, ErrorInfo, JobStatus
from pqueue.limits import Limit
from pqueue.spec import build_spec
from tests.conftest import service_url
from tests.integration.redis.conftest import OpenRedis

pytestmark = pytest.mark.redis

DOC = Path(__file__).parents[3] / "docs" / "redis.md"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def documented_keys(prefix: str) -> dict[str, tuple[re.Pattern[str], str]]:
    """Key pattern (as written in the doc) -> (regex for ``prefix``, Redis type)."""
    found: dict[str, tuple[re.Pattern[str], str]] = {}
    for line in DOC.read_text().splitlines():
        match = re.match(r"^\| `(<p>[^`]*)` \| (\w+) \|", line)
        if match:
            pattern, kind = match.groups()
            regex = re.escape(pattern)
            for placeholder, part in (
                (re.escape("<p>"), re.escape(prefix)),
                (re.escape("<q>"), r"[^{}:]+"),
                (re.escape("<id>"), _UUID),
                (re.escape("<key>"), r".+"),
            ):
                regex = regex.replace(placeholder, part)
            found[pattern] = (re.compile(f"^{regex}$"), kind)
    return found


def documented_fields() -> set[str]:
    """Every field named in the "Job hash fields" table."""
    text = DOC.read_text().split("### Job hash fields", 1)[1].split("\n\n", 2)[1]
    return {name for line in text.splitlines()[2:] for name in re.findall(r"`(\w+)`", line.split("|")[1])}


async def _exercise_every_state(open_redis: OpenRedis) -> None:
    confirming = await open_redis()  # open refuses wait_replicas above the replicas there are:
    assert isinstance(confirming, RedisBroker)  # asked for after open, it writes its marker,
    confirming.options = dataclasses.replace(confirming.options, wait_replicas=1)  # unconfirmed
    with pytest.raises(NotReplicated):
        await confirming.enqueue([build_spec("t", "confirmed")])
    broker = await open_redis()
    await broker.enqueue([build_spec("t", i) for i in range(7)])  # one stays pending
    await broker.enqueue([build_spec("t", "later", delay=3600, unique_for=60, meta={"m": "1"}, timeout=5)])
    leases = await broker.claim(["default"], worker_id="w", limit=5, lease_for=30)
    assert await broker.ack(leases[:1], ['{"ok":true}']) == [True]
    assert await broker.fail(leases[1], ErrorInfo("E", "retry me"), retry_in=600)
    assert await broker.fail(leases[2], ErrorInfo("E", "dead"), retry_in=None)
    assert await broker.release(leases[3:4], delay=60) == [True]  # back to scheduled
    [waiting] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    assert await broker.release([waiting]) == [True]
    assert await broker.cancel(waiting.job.id)
    await broker.idempotency_begin("charge:1", leases[4].job.id, ttl=30)
    await broker.register_worker(WorkerInfo("w1", "box", 1, ("default",), 4, 0.0), ttl=30)
    await broker.pause("held")  # the paused index and the queue's flag
    parked = asyncio.create_task(broker.wait_for_jobs(["idle"], timeout=30, claimer=Claimer("w", 1, 30)))
    await asyncio.sleep(0.2)  # parked on the idle queue for the next 30 s
    parked.cancel()
    await _exercise_dependencies(broker)
    await broker.enqueue([build_spec("t", "urgent", queue="ranked", priority=5)])  # ADR 0145
    counts = (await broker.counts())["default"]
    assert all(counts[s] >= 1 for s in JobStatus), counts
    # a limit group's lane (ADR 0110): waiting, delayed, running and retrying jobs
    limit = Limit("acme", rate=1000.0, burst=100.0, concurrency=5)
    await broker.enqueue([build_spec("t", i, queue="limited", limit=limit) for i in range(4)])
    await broker.enqueue([build_spec("t", "later", queue="limited", delay=3600, limit=limit)])
    running = await broker.claim(["limited"], worker_id="w", limit=2, lease_for=30)
    assert [lease.job.limit_key for lease in running] == ["acme", "acme"]
    assert await broker.fail(running[0], ErrorInfo("E", "retry me"), retry_in=600)


async def _exercise_dependencies(broker: RedisBroker) -> None:
    """A waiting job with one parent completed (its result copied in) and one not, and a
    `settled` record as a crash between the two steps of a release leaves it (ADR 0116)."""
    first, other = build_spec("t", 1, queue="flows"), build_spec("t", 2, queue="flows", delay=3600)
    child = build_spec("t", 3, depends_on=[first.id, other.id])
    late = build_spec("t", 4, queue="flows")
    await broker.enqueue_flow([first, other, child, late, build_spec("t", 5, depends_on=[late.id])])
    leases = await broker.claim(["flows"], worker_id="w", limit=2, lease_for=30)
    assert [lease.job.id for lease in leases] == [first.id, late.id]
    assert await broker.ack(leases[:1], ['"one"']) == [True]
    call = calls.ack(broker.queue("flows"), broker.now_arg(), 0, leases[1:], [None], results_channel="r")
    assert await broker.run(call) == [2]  # completed, its dependant not told yet
    watcher = asyncio.create_task(broker.wait_finished(other.id, 30))
    await asyncio.sleep(0.2)  # other is now watched
    watcher.cancel()


@pytest.mark.asyncio
async def test_key_layout_matches_docs(open_redis: OpenRedis, shared_prefix: str) -> None:
    await _exercise_every_state(open_redis)
    documented = documented_keys(shared_prefix)
    assert len(documented) >= 14  # the table was parsed
    seen: set[str] = set()
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:
        async for key in client.scan_iter(match=f"{shared_prefix}:*", count=1000):
            matches = [p for p, (regex, _) in documented.items() if regex.match(key)]
            assert len(matches) == 1, f"{key!r} matches {matches} in docs/redis.md"
            kind = await client.type(key)
            assert kind == documented[matches[0]][1], f"{key!r} is a {kind}, documented as {matches[0]}"
            seen.add(matches[0])
            if matches[0].endswith(":job:<id>"):
                fields = {f.partition(":")[0] for f in await client.hkeys(key)}  # presult:<id> -> presult
                assert fields <= documented_fields(), f"undocumented fields {fields - documented_fields()}"
    finally:
        await client.aclose()
    assert seen == set(documented), f"never written: {set(documented) - seen}"


@pytest.mark.asyncio
async def test_finished_jobs_and_unique_keys_expire_by_ttl(open_redis: OpenRedis, shared_prefix: str) -> None:
    broker = await open_redis(retention=120)
    done, cancelled, waiting = (
        r.id
        for r in await broker.enqueue(
            [build_spec("t", 1), build_spec("t", 2), build_spec("t", 3, unique_key="u", unique_for=90)]
        )
    )
    [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    assert lease.job.id == done and await broker.ack([lease]) == [True]
    assert await broker.cancel(cancelled)
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:
        job_key = f"{shared_prefix}:{{default}}:job:"
        assert 0 < await client.pttl(job_key + done) <= 120_000
        assert 0 < await client.pttl(job_key + cancelled) <= 120_000
        assert await client.pttl(job_key + waiting) == -1  # live jobs never expire
        assert 0 < await client.pttl(f"{shared_prefix}:{{default}}:unique:u") <= 90_000
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_prune_removes_index_entries_and_leftover_hashes(open_redis: OpenRedis) -> None:
    clock = ManualClock()
    broker = await open_redis(clock=clock, retention=60)
    ids = [r.id for r in await broker.enqueue([build_spec("t", i) for i in range(30)])]
    leases = await broker.claim(["default"], worker_id="w", limit=20, lease_for=30)
    assert all(await broker.ack(leases))
    for job_id in ids[20:25]:
        assert await broker.cancel(job_id)
    clock.advance(61)
    assert await broker.prune(limit=10) == 10
    assert await broker.prune() == 15
    counts = (await broker.counts())["default"]
    assert (counts[JobStatus.COMPLETED], counts[JobStatus.CANCELLED], counts[JobStatus.PENDING]) == (0, 0, 5)
    for job_id in ids[:25]:
        with pytest.raises(Exception, match="no job"):
            await broker.get_job(job_id)


@pytest.mark.asyncio
@pytest.mark.parametrize("payload", ["{not json", "[" * 5000 + "]" * 5000], ids=["not-json", "too-deep"])
async def test_a_corrupt_job_is_reported_and_dead_lettered(
    open_redis: OpenRedis, shared_prefix: str, payload: str
) -> None:
    broker = await open_redis()
    [bad, good] = [r.id for r in await broker.enqueue([build_spec("t", 1), build_spec("t", 2)])]
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:
        await client.hset(f"{shared_prefix}:{{default}}:job:{bad}", "payload", payload)
    finally:
        await client.aclose()
    with pytest.raises(CorruptJob, match=bad):
        await broker.get_job(bad)
    leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
    assert [lease.job.id for lease in leases] == [good]  # the bad one is not handed out
    assert await broker.claim(["default"], worker_id="w", limit=10, lease_for=30) == []
    counts = (await broker.counts())["default"]
    assert counts[JobStatus.DEAD] == 1 and counts[JobStatus.ACTIVE] == 1
    # The dead-letter listing still works and shows a stand-in that can be purged by id.
    [listed] = (await broker.list_jobs(JobStatus.DEAD)).jobs
    assert (listed.id, listed.type, listed.status) == (bad, UNREADABLE_TYPE, JobStatus.DEAD)
    assert listed.last_error is not None and listed.last_error.kind == "CorruptJob"
    assert await broker.purge_dead(job_ids=[bad]) == 1


@pytest.mark.asyncio
async def test_a_prefix_with_another_layout_is_refused(open_redis: OpenRedis, shared_prefix: str) -> None:
    await open_redis()
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:
        await client.hset(f"{shared_prefix}:meta", "layout", "999")
    finally:
        await client.aclose()
    with pytest.raises(SchemaError, match="999"):
        await open_redis()


@pytest.mark.asyncio
async def test_a_claim_failing_on_a_later_queue_keeps_the_jobs_already_leased(
    open_redis: OpenRedis, shared_prefix: str
) -> None:
    broker = await open_redis()
    [first] = await broker.enqueue([build_spec("t", 1, queue="a")])
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:  # queue b's pending list holds a string: its claim script fails with WRONGTYPE
        await client.set(f"{shared_prefix}:{{b}}:pending", "not a list")
    finally:
        await client.aclose()
    leases = await broker.claim(["a", "b"], worker_id="w", limit=10, lease_for=30)
    assert [lease.job.id for lease in leases] == [first.id]
    with pytest.raises(BrokerError):  # with nothing leased first, the failure is reported
        await broker.claim(["b"], worker_id="w", limit=10, lease_for=30)


@pytest.mark.asyncio
async def test_a_failed_dead_lettering_keeps_the_claims_other_jobs(
    open_redis: OpenRedis, shared_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = await open_redis()
    [bad, good] = [r.id for r in await broker.enqueue([build_spec("t", 1), build_spec("t", 2)])]
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:
        await client.hset(f"{shared_prefix}:{{default}}:job:{bad}", "payload", "{not json")
    finally:
        await client.aclose()
    real_run = broker.run

    async def run(call: ScriptCall) -> object:
        if call.name == "fail":
            raise RedisConnectionError("connection lost while burying")
        return await real_run(call)

    monkeypatch.setattr(broker, "run", run)
    leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
    assert [lease.job.id for lease in leases] == [good]  # not lost over the bad one
    monkeypatch.undo()
    assert (await broker.counts())["default"][JobStatus.ACTIVE] == 2  # the bad one awaits lease expiry
