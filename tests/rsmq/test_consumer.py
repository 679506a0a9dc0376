"""``pqueue.rsmq.Consumer`` on real Redis: delete on success, back-off and the dead queue
on failure, heartbeats, the rc fence, drain, realtime wake-ups and an outage logged once.
Waits are on conditions (with generous limits), never on timing claims."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from pqueue.brokers.redis import eviction
from pqueue.errors import BrokerUnreachable
from pqueue.rsmq import Consumer, InvalidArgument, Rsmq
from pqueue.rsmq.core import settle
from pqueue.steps import run_sync
from tests.private_servers import PrivateRedis
from tests.rsmq import handlers
from tests.rsmq.running import Running, wait_until


@pytest.fixture
def rsmq(redis_url: str, ns: str) -> Iterator[Rsmq]:
    handlers.runs.clear()
    with Rsmq(redis_url, ns=ns) as client:
        yield client


@pytest.fixture
def consume(redis_url: str, ns: str) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(queue: str = "q", handler: Any = handlers.record, **options: Any) -> Running:
        options = {"poll_interval": 0.05, **options}
        running = Running(Consumer(redis_url, queue, handler, ns=ns, **options))
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()


@pytest.mark.parametrize("handler", [handlers.record, handlers.record_async], ids=["sync", "async"])
def test_success_deletes_each_message_once(rsmq: Rsmq, consume: Callable[..., Running], handler: Any) -> None:
    rsmq.create_queue("q")
    bodies = {f"m{i}" for i in range(20)}
    for body in bodies:
        rsmq.send_message("q", body)
    running = consume(handler=handler, concurrency=4)
    wait_until(lambda: rsmq.get_queue_attributes("q").msgs == 0)
    running.stop()
    assert sorted(handlers.runs) == sorted((body, 1) for body in bodies)
    attrs = rsmq.get_queue_attributes("q")
    assert (attrs.totalsent, attrs.totalrecv) == (20, 20)


def test_failures_back_off_then_go_to_the_dead_queue(rsmq: Rsmq, consume: Callable[..., Running]) -> None:
    rsmq.create_queue("q", vt=1)
    message_id = rsmq.send_message("q", "fail")
    running = consume(max_receives=2, backoff=lambda rc, vt: 0.2 * rc)
    wait_until(lambda: "q-dead" in rsmq.list_queues())
    running.stop()
    assert handlers.runs == [("fail", 1), ("fail", 2)]
    assert rsmq.get_queue_attributes("q").msgs == 0
    dead = rsmq.receive_message("q-dead")  # an RSMQ queue like any other
    assert dead is not None and (dead.id, dead.message, dead.rc) == (message_id, "fail", 1)


def test_backoff_hides_a_failed_message_for_longer_each_time() -> None:
    from pqueue.rsmq.consumer import MAX_BACKOFF, default_backoff

    assert [default_backoff(rc, 30) for rc in (1, 2, 3)] == [30, 60, 120]
    assert default_backoff(30, 30) == MAX_BACKOFF


def test_a_message_received_too_often_is_buried_unrun(rsmq: Rsmq, consume: Callable[..., Running]) -> None:
    rsmq.create_queue("q")
    message_id = rsmq.send_message("q", "crashed its consumers")
    for _ in range(3):  # three consumers took it and died without a word
        assert rsmq.receive_message("q", vt=0) is not None
    running = consume(max_receives=3)
    wait_until(lambda: "q-dead" in rsmq.list_queues())
    running.stop()
    assert handlers.runs == []
    assert [m.id for m in rsmq.list_messages("q-dead")] == [message_id]
    assert rsmq.requeue_dead("q") == 1
    back = rsmq.receive_message("q")
    assert back is not None and (back.id, back.rc) == (message_id, 1)


def test_heartbeats_keep_a_slow_message_hidden(rsmq: Rsmq, consume: Callable[..., Running]) -> None:
    rsmq.create_queue("q", vt=1)
    rsmq.send_message("q", "slow:2.5")
    running = consume(concurrency=2)
    wait_until(lambda: rsmq.get_queue_attributes("q").msgs == 0)
    running.stop()
    assert handlers.runs == [("slow:2.5", 1)]  # its vt ran out twice over, yet nobody took it again


def test_the_rc_fence_stops_a_consumer_whose_message_was_taken_again(rsmq: Rsmq) -> None:
    rsmq.create_queue("q")
    rsmq.send_message("q", "m")
    mine = rsmq.receive_message("q", vt=0)
    assert mine is not None
    theirs = rsmq.receive_message("q", vt=60)  # my vt ran out; someone else has it now
    assert theirs is not None and theirs.rc == 2
    for action in ("delete", "hide", "bury"):
        assert run_sync(settle(rsmq.keys, "q", mine, action, 0), rsmq._io) is False
    assert rsmq.get_queue_attributes("q").msgs == 1 and "q-dead" not in rsmq.list_queues()
    assert run_sync(settle(rsmq.keys, "q", theirs, "delete", 0), rsmq._io) is True
    assert rsmq.get_queue_attributes("q").msgs == 0


@pytest.mark.parametrize("timeout", [0, 0.2])
def test_drain_hands_back_what_outlives_the_timeout(
    rsmq: Rsmq, consume: Callable[..., Running], timeout: float
) -> None:
    rsmq.create_queue("q", vt=60)
    rsmq.send_message("q", "slow:30")
    running = consume(handler=handlers.record_async, shutdown_timeout=timeout)
    wait_until(lambda: handlers.runs != [])
    running.stop()
    back = rsmq.receive_message("q")  # visible at once, not after its 60 s vt
    assert back is not None and (back.message, back.rc) == ("slow:30", 2)


def test_realtime_sends_wake_an_idle_consumer(
    redis_url: str, ns: str, rsmq: Rsmq, consume: Callable[..., Running], raw: Any
) -> None:
    rsmq.create_queue("q")
    running = consume(realtime=True, poll_interval=300)
    wait_until(lambda: raw.pubsub_numsub(f"{ns}:rt:q")[0][1] == 1)  # the listener subscribed
    time.sleep(0.2)  # and the slots went idle (a slot still receiving would find it anyway)
    with Rsmq(redis_url, ns=ns, realtime=True) as sender:
        sender.send_message("q", "wake up")
    wait_until(lambda: handlers.runs == [("wake up", 1)], timeout=60)  # far below the 300 s poll
    running.stop()


def test_bad_options_are_refused(redis_url: str) -> None:
    with pytest.raises(InvalidArgument, match="concurrency"):
        Consumer(redis_url, "q", handlers.record, concurrency=0)
    with pytest.raises(InvalidArgument, match="queue name"):
        Consumer(redis_url, "q" * 156, handlers.record)  # its dead queue's name would not fit
    with pytest.raises(InvalidArgument, match="at least 1 second"):
        Consumer(redis_url, "q", handlers.record, vt=0)


def test_an_outage_is_one_warning_and_the_consumer_carries_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if PrivateRedis.missing():
        pytest.skip(str(PrivateRedis.missing()))
    server = PrivateRedis(tmp_path)
    server.start()
    handlers.runs.clear()
    try:
        with Rsmq(server.url, ns="t") as rsmq:
            rsmq.create_queue("q")
            running = Running(
                Consumer(server.url, "q", handlers.record, ns="t", concurrency=3, poll_interval=0.05)
            )
            time.sleep(0.3)
            with caplog.at_level(logging.INFO, logger="pqueue.broker"):
                server.stop()
                time.sleep(1.5)  # the slots keep trying against a server that is gone
                server.start()
                wait_until(lambda: _sent(rsmq, "q", "after the outage"))  # a restarted server
                # answers LOADING until its AOF is read: this producer waits that out
                wait_until(lambda: handlers.runs == [("after the outage", 1)])
            running.stop()
    finally:
        server.stop()
    lost = [r for r in caplog.records if r.levelno == logging.WARNING and "lost Redis" in r.getMessage()]
    back = [r for r in caplog.records if "is back after" in r.getMessage()]
    assert len(lost) == 1 and len(back) == 1


def _sent(rsmq: Rsmq, qname: str, message: str) -> bool:
    """Send ``message``; False while the server is unreachable (restarting, loading)."""
    try:
        rsmq.send_message(qname, message)
    except BrokerUnreachable:
        return False
    return True


@pytest.mark.parametrize("policy", ["allkeys-lru", "noeviction"])
def test_a_redis_that_may_evict_messages_is_one_warning_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    if PrivateRedis.missing():
        pytest.skip(str(PrivateRedis.missing()))
    monkeypatch.setattr(eviction, "_warned", set())  # once per process: this test's process
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        with Redis(port=server.port) as raw:
            raw.config_set("maxmemory-policy", policy)
        with Rsmq(server.url, ns="t") as rsmq, caplog.at_level(logging.WARNING, logger="pqueue"):
            rsmq.create_queue("q")
            Running(Consumer(server.url, "q", handlers.record, ns="t", poll_interval=0.05)).stop()
            Running(Consumer(server.url, "q", handlers.record, ns="t", poll_interval=0.05)).stop()
    finally:
        server.stop()
    warnings = [r.getMessage() for r in caplog.records]
    if policy == "noeviction":
        assert warnings == []
    else:
        assert warnings == [
            f"Redis at 127.0.0.1:{server.port} has maxmemory-policy allkeys-lru: Redis may delete jobs "
            "to free memory; set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, "
            "and in redis.conf or your provider's settings)"
        ]
