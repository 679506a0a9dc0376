"""The RSMQ API on real Redis, for the blocking and the asyncio client alike: results in
RSMQ's shapes and units, the layout any RSMQ client reads, and bad input refused with
nothing written."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from redis import Redis

from pqueue.errors import BrokerUnreachable, PQueueError
from pqueue.rsmq import (
    AsyncRsmq,
    InvalidArgument,
    MessageTooLong,
    QueueExists,
    QueueNotFound,
    Rsmq,
    RsmqError,
)
from pqueue.rsmq.validation import length
from tests.ports import free_port


def _keys(raw: Redis, ns: str) -> set[str]:
    return set(raw.scan_iter(match=f"{ns}:*"))


def test_create_list_and_delete_queues(rsmq: Any, ns: str, raw: Redis) -> None:
    rsmq.create_queue("b")
    rsmq.create_queue("a", vt=5, delay=2, maxsize=-1)
    assert rsmq.list_queues() == ["a", "b"]
    assert raw.smembers(f"{ns}:QUEUES") == {"a", "b"}
    stored = raw.hgetall(f"{ns}:a:Q")
    assert {k: stored[k] for k in ("vt", "delay", "maxsize")} == {"vt": "5", "delay": "2", "maxsize": "-1"}
    assert abs(int(stored["created"]) - time.time()) < 5 and stored["created"] == stored["modified"]
    with pytest.raises(QueueExists, match="'a'"):
        rsmq.create_queue("a")
    rsmq.delete_queue("a")
    assert rsmq.list_queues() == ["b"]
    with pytest.raises(QueueNotFound, match="'a'"):
        rsmq.delete_queue("a")


def test_send_receive_and_the_layout(rsmq: Any, ns: str, raw: Redis) -> None:
    rsmq.create_queue("q", vt=60)
    before = time.time() * 1000
    message_id = rsmq.send_message("q", "héllo, wörld 😀")
    assert len(message_id) == 32 and message_id[:10].isalnum() and message_id[:10] == message_id[:10].lower()
    assert raw.hget(f"{ns}:q:Q", message_id) == "héllo, wörld 😀"
    assert raw.hget(f"{ns}:q:Q", "totalsent") == "1"
    score = raw.zscore(f"{ns}:q", message_id)
    assert score is not None and abs(score - before) < 2000

    got = rsmq.receive_message("q")
    assert got is not None
    assert (got.id, got.message, got.rc) == (message_id, "héllo, wörld 😀", 1)
    assert abs(got.sent - before) < 2000 and got.sent <= got.fr + 1
    assert raw.hget(f"{ns}:q:Q", f"{message_id}:rc") == "1"
    assert raw.hget(f"{ns}:q:Q", f"{message_id}:fr") == str(got.fr)
    assert raw.zscore(f"{ns}:q", message_id) == pytest.approx(got.fr + 60_000, abs=5)
    assert rsmq.receive_message("q") is None  # hidden for its vt

    assert rsmq.delete_message("q", message_id) is True
    assert rsmq.delete_message("q", message_id) is False
    settings = ["vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv"]
    assert raw.hkeys(f"{ns}:q:Q") == settings  # the message's body, rc and fr are gone


def test_vt_expiry_counts_receives_and_keeps_first_receive(rsmq: Any) -> None:
    rsmq.create_queue("q")
    rsmq.send_message("q", "m")
    first = rsmq.receive_message("q", vt=0)
    second = rsmq.receive_message("q", vt=0)
    assert first is not None and second is not None
    assert (first.rc, second.rc) == (1, 2)
    assert second.fr == first.fr and second.id == first.id
    attrs = rsmq.get_queue_attributes("q")
    assert (attrs.totalrecv, attrs.totalsent, attrs.msgs) == (2, 1, 1)


def test_queue_delay_and_per_message_delay(rsmq: Any) -> None:
    rsmq.create_queue("q", delay=60)
    rsmq.send_message("q", "later")
    assert rsmq.receive_message("q") is None
    rsmq.send_message("q", "now", delay=0)
    got = rsmq.receive_message("q")
    assert got is not None and got.message == "now"
    attrs = rsmq.get_queue_attributes("q")
    assert (attrs.msgs, attrs.hiddenmsgs) == (2, 2)


def test_change_visibility_and_pop(rsmq: Any) -> None:
    rsmq.create_queue("q")
    message_id = rsmq.send_message("q", "m")
    assert rsmq.receive_message("q") is not None
    assert rsmq.change_message_visibility("q", message_id, 0) is True
    popped = rsmq.pop_message("q")
    assert popped is not None and (popped.id, popped.rc) == (message_id, 2)
    assert rsmq.pop_message("q") is None
    assert rsmq.change_message_visibility("q", message_id, 0) is False
    attrs = rsmq.get_queue_attributes("q")
    assert (attrs.msgs, attrs.totalrecv) == (0, 2)


def test_set_queue_attributes(rsmq: Any) -> None:
    rsmq.create_queue("q")
    created = rsmq.get_queue_attributes("q")
    changed = rsmq.set_queue_attributes("q", vt=90, maxsize=2048)
    assert (changed.vt, changed.delay, changed.maxsize) == (90, 0, 2048)
    assert changed.modified >= created.created
    with pytest.raises(InvalidArgument, match="at least one"):
        rsmq.set_queue_attributes("q")


def test_maxsize_counts_characters_as_rsmq_does(rsmq: Any, ns: str, raw: Redis) -> None:
    rsmq.create_queue("q", maxsize=1024)
    rsmq.send_message("q", "é" * 1024)  # 2048 bytes, 1024 characters: accepted
    with pytest.raises(MessageTooLong, match=r"1025 characters .* maxsize of 1024"):
        rsmq.send_message("q", "x" * 1025)
    rsmq.send_message("q", "😀" * 512)  # outside the BMP: two UTF-16 units each, 1024 in all
    with pytest.raises(MessageTooLong, match="1026 characters"):
        rsmq.send_message("q", "😀" * 513)
    assert length("😀") == 2
    assert rsmq.get_queue_attributes("q").totalsent == 2
    rsmq.set_queue_attributes("q", maxsize=-1)
    rsmq.send_message("q", "x" * 100_000)


def test_sixty_kilobyte_body(rsmq: Any) -> None:
    rsmq.create_queue("q")
    body = ("abcdefghé" * 7000)[:60_000] + "😀"  # 60,002 UTF-16 units, 66,669 bytes
    rsmq.send_message("q", body)
    got = rsmq.pop_message("q")
    assert got is not None and got.message == body


BAD_INPUT = [
    ("create_queue", ("bad name",), {}, "queue name 'bad name'"),
    ("create_queue", ("x" * 161,), {}, "queue name"),
    ("create_queue", ("q2",), {"vt": -1}, "vt must be .* got -1"),
    ("create_queue", ("q2",), {"vt": 10_000_000}, "vt must be"),
    ("create_queue", ("q2",), {"delay": 1.5}, "delay must be .* got 1.5"),
    ("create_queue", ("q2",), {"maxsize": 1023}, "maxsize must be .* got 1023"),
    ("create_queue", ("q2",), {"maxsize": True}, "maxsize must be"),
    ("send_message", ("q", b"bytes"), {}, "must be a str, got bytes"),
    ("send_message", ("q", 42), {}, "must be a str, got int"),
    ("send_message", ("q", "a\ud800b"), {}, "cannot be encoded as UTF-8"),  # was a UnicodeEncodeError
    ("send_message", ("q", "m"), {"delay": -5}, "delay must be"),
    ("receive_message", ("q",), {"vt": "30"}, "vt must be .* got '30'"),
    ("delete_message", ("q", "short"), {}, "message id 'short'"),
    ("change_message_visibility", ("q", "a" * 32, -1), {}, "vt must be"),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "message"), BAD_INPUT, ids=[b[-1] for b in BAD_INPUT])
def test_bad_input_is_one_error_and_writes_nothing(  # noqa: PLR0917 - fixtures and parameters
    rsmq: Any, ns: str, raw: Redis, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    rsmq.create_queue("q")
    before = {key: raw.dump(key) for key in _keys(raw, ns)}
    with pytest.raises(InvalidArgument, match=message) as caught:
        getattr(rsmq, method)(*args, **kwargs)
    assert isinstance(caught.value, RsmqError | PQueueError) and "\n" not in str(caught.value)
    assert {key: raw.dump(key) for key in _keys(raw, ns)} == before


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.send_message("nope", "m"),
        lambda r: r.receive_message("nope"),
        lambda r: r.pop_message("nope"),
        lambda r: r.get_queue_attributes("nope"),
        lambda r: r.set_queue_attributes("nope", vt=1),
        lambda r: r.change_message_visibility("nope", "a" * 32, 1),
    ],
)
def test_unknown_queue(rsmq: Any, ns: str, raw: Redis, call: Any) -> None:
    with pytest.raises(QueueNotFound, match="'nope'"):
        call(rsmq)
    assert _keys(raw, ns) == set()


def test_realtime_publishes_the_count(redis_url: str, ns: str, raw: Redis) -> None:
    from pqueue.rsmq import Rsmq

    pubsub = raw.pubsub()
    pubsub.subscribe(f"{ns}:rt:q")
    assert pubsub.get_message(timeout=2) is not None  # the subscribe confirmation
    with Rsmq(redis_url, ns=ns, realtime=True) as rsmq:
        rsmq.create_queue("q")
        rsmq.send_message("q", "a")
        rsmq.send_message("q", "b")
    counts = [pubsub.get_message(timeout=2), pubsub.get_message(timeout=2)]
    assert [m["data"] for m in counts if m] == ["1", "2"]
    pubsub.close()


def test_bodies_that_are_not_utf8_survive(rsmq: Any, ns: str, redis_url: str) -> None:
    rsmq.create_queue("q")
    binary = Redis.from_url(redis_url)
    message_id = rsmq.send_message("q", "placeholder")
    binary.hset(f"{ns}:q:Q", message_id, b"\xff\xfe raw")  # as another client might write
    got = rsmq.receive_message("q")
    assert got is not None and got.message.encode("utf-8", "surrogateescape") == b"\xff\xfe raw"
    binary.close()


def test_unreachable_server_is_one_clear_error(ns: str) -> None:
    from pqueue.errors import BrokerUnreachable
    from pqueue.rsmq import Rsmq

    with (
        Rsmq("redis://127.0.0.1:1/0", ns=ns) as rsmq,
        pytest.raises(BrokerUnreachable, match=r"127\.0\.0\.1:1"),
    ):
        rsmq.list_queues()


def test_the_dsn_prefix_is_the_namespace(redis_url: str, ns: str, raw: Redis) -> None:
    from pqueue.errors import ConfigError
    from pqueue.rsmq import Rsmq

    sep = "&" if "?" in redis_url else "?"
    with Rsmq(f"{redis_url}{sep}prefix={ns}&retention=60") as rsmq:
        assert rsmq.keys.ns == ns
        rsmq.create_queue("q")
    assert raw.sismember(f"{ns}:QUEUES", "q")
    with pytest.raises(ConfigError, match="disagree"):
        Rsmq(f"{redis_url}{sep}prefix={ns}", ns="other")
    with pytest.raises(ConfigError, match="needs a Redis URL"):
        Rsmq("postgresql://u:secret@h/db")


async def test_concurrent_async_calls_share_round_trips_and_keep_their_own_errors(
    redis_url: str, ns: str, raw: Redis
) -> None:
    raw.set(f"{ns}:broken:Q", "not a hash")  # every script on it fails with WRONGTYPE
    async with AsyncRsmq(redis_url, ns=ns) as rsmq:
        await rsmq.create_queue("q")
        round_trips: list[int] = []
        send = rsmq.transport._send

        async def counted(requests: list[Any]) -> list[Any]:
            round_trips.append(len(requests))
            return await send(requests)

        rsmq.transport._rounds._send = counted
        calls = [rsmq.send_message("q", f"m{i}") for i in range(30)]
        calls += [rsmq.send_message("broken", "m"), rsmq.send_message("missing", "m")]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(o, str) and len(o) == 32 for o in outcomes[:30])
        assert isinstance(outcomes[30], RsmqError) and "WRONGTYPE" in str(outcomes[30])
        assert isinstance(outcomes[31], QueueNotFound)
        assert sum(round_trips) == 32 and len(round_trips) < 32  # the first alone, the rest together
        received = await asyncio.gather(*(rsmq.pop_message("q") for _ in range(31)))
    assert sorted(m.message for m in received if m is not None) == sorted(f"m{i}" for i in range(30))
    assert received.count(None) == 1


def test_a_client_that_never_reached_redis_logs_no_outage(caplog: pytest.LogCaptureFixture) -> None:
    """Like a broker's failed ``open``, it lost nothing: the error says why, and no
    "lost Redis ... retrying until it is back" comes first (issue 34)."""
    url = f"redis://127.0.0.1:{free_port()}/0"

    async def both() -> None:
        with Rsmq(url) as rsmq, pytest.raises(BrokerUnreachable, match="unreachable: connection refused"):
            rsmq.list_queues()
        async with AsyncRsmq(url) as aio:
            with pytest.raises(BrokerUnreachable, match="unreachable: connection refused"):
                await aio.list_queues()

    with caplog.at_level(logging.DEBUG, logger="pqueue"):
        asyncio.run(both())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []
