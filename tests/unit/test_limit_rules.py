"""Limit rules (pqueue.limits, Router.task/queue, enqueue options): bad specs are refused
with a typed error naming the field, and a job's limit is resolved once, by the producer."""

from __future__ import annotations

import asyncio

import pytest
from redis.crc import key_slot

from pqueue import AsyncClient, Router
from pqueue.brokers.redis.keys import lane_keys, lanes, queue_keys
from pqueue.errors import ConfigError, InvalidJob, InvalidOption
from pqueue.limits import Limit, burst_for, parse_rate, refill
from pqueue.task import Task


@pytest.mark.parametrize(
    ("text", "per_second"), [("100/s", 100.0), ("30/m", 0.5), ("36/h", 0.01), ("2.5/s", 2.5)]
)
def test_rates_read_per_second_minute_or_hour(text: str, per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(per_second)


@pytest.mark.parametrize("bad", ["100/x", "100", "0/s", "-1/s", "/s", 100])
def test_a_bad_rate_is_a_config_error(bad: object) -> None:
    router = Router()
    with pytest.raises(ConfigError, match="rate"):
        router.task("t", rate=bad)(lambda job: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_concurrency_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        Router().task("t", concurrency=bad)(lambda job: None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="concurrency"):
        Router().queue("q", concurrency=bad)  # type: ignore[arg-type]


def test_a_limit_key_needs_a_limit_and_a_queue_rule_needs_one() -> None:
    with pytest.raises(ConfigError, match="limit_key needs"):
        Router().task("t", limit_key=lambda p: "k")(lambda job: None)
    with pytest.raises(ConfigError, match="needs rate"):
        Router().queue("q")
    with pytest.raises(ConfigError, match="limit_key must be"):
        Router().task("t", concurrency=1, limit_key=3)(lambda job: None)  # type: ignore[arg-type]


def test_the_bucket_holds_a_tenth_of_a_second_and_at_least_one_token() -> None:
    assert [burst_for(r) for r in (0.01, 1.0, 9.0, 20.0, 100.0)] == [1.0, 1.0, 1.0, 2.0, 10.0]
    limit = Limit("k", rate=20.0, burst=2.0)
    assert refill(0.0, 0.0, 0.05, limit) == pytest.approx(1.0)
    assert refill(0.0, 0.0, 60.0, limit) == 2.0


def test_a_limit_text_round_trips() -> None:
    for limit in (Limit("k", 20.0, 2.0, 3), Limit("k", None, 1.0, 5), Limit("k", 0.5, 1.0, None)):
        assert Limit.from_text("k", limit.to_text()) == limit


def _router() -> Router:
    router = Router()

    @router.task("send", rate="20/s", concurrency=2, limit_key=lambda p: p["tenant"])
    def send(job: object) -> None: ...

    @router.task("report", queue="api")
    def report(job: object) -> None: ...

    @router.task("own", queue="api", concurrency=1)
    def own(job: object) -> None: ...

    router.queue("api", rate="5/s")
    return router


def _limit(router: Router, task: Task) -> Limit | None:
    handler = router.handler_for(task.type)
    return router.limit_for(handler, handler.defaults(task))


def test_the_task_rule_then_the_queue_rule_then_nothing() -> None:
    router = _router()
    assert _limit(router, Task("send", {"tenant": "acme"})) == Limit("acme", 20.0, 2.0, 2)
    assert _limit(router, Task("report", {})) == Limit("*", 5.0, 1.0, None)
    assert _limit(router, Task("own", {})) == Limit("own", None, 1.0, 1)  # the task's rule wins
    assert _limit(router, Task("report", {}, queue="other")) is None
    assert _limit(router, Task("send", {"tenant": "acme"}, limit_key="vip")) == Limit("vip", 20.0, 2.0, 2)


@pytest.mark.parametrize(
    ("payload", "match"),
    [({"tenant": 7}, "must return a str"), ({}, "raised KeyError"), ({"tenant": "a b"}, "limit key")],
)
def test_a_bad_limit_key_result_refuses_the_job(payload: object, match: str) -> None:
    router = _router()

    async def main() -> None:
        async with AsyncClient("memory://limits-unit-bad", router=router) as client:
            with pytest.raises(InvalidJob, match=match):
                await client.enqueue("send", payload)
            assert await client.broker.counts() == {}  # nothing stored

    asyncio.run(main())


def test_a_producer_without_the_router_names_the_limit_itself() -> None:
    spec = Task("t", 1, limit_key="acme", rate="10/s", concurrency=3).to_spec()
    assert spec.limit == Limit("acme", 10.0, 1.0, 3)
    assert Task("t", 1, concurrency=3).to_spec().limit == Limit("*", None, 1.0, 3)
    with pytest.raises(InvalidOption, match="limit_key needs"):
        Task("t", 1, limit_key="acme").to_spec()
    with pytest.raises(InvalidOption, match="rate"):
        Task("t", 1, rate="100/x").to_spec()
    with pytest.raises(InvalidOption, match="concurrency"):
        Task("t", 1, concurrency=0).to_spec()


def test_enqueue_map_resolves_each_payloads_key() -> None:
    router = _router()

    async def main() -> None:
        async with AsyncClient("memory://limits-unit-map", router=router) as client:
            results = await client.enqueue_map("send", [{"tenant": "a"}, {"tenant": "b"}])
            jobs = [await client.get_job(r.id) for r in results]
            assert [job.limit_key for job in jobs] == ["a", "b"]

    asyncio.run(main())


def test_lane_keys_share_their_queues_cluster_slot() -> None:
    k = queue_keys("pq:test", "emails.v2")
    lane = lane_keys("pq:test", "emails.v2", "ten{ant}:x")
    names = [lane.pending, lane.scheduled, lane.retry, lane.active, lanes("pq:test", "emails.v2").zset]
    assert {key_slot(name.encode()) for name in names} == {key_slot(k.pending.encode())}
    assert (lane.job_prefix, lane.dead, lane.seq) == (k.job_prefix, k.dead, k.seq)
