"""Interop with the reference Node client (npm ``rsmq``), both ways, on one namespace:
what one side writes the other reads, with ids, ``rc``, ``fr``, ``sent`` and the totals
in agreement. Few tests, each covering several of the issue's points."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pqueue.rsmq import Consumer, MessageTooLong, QueueNotFound, Rsmq, RsmqMessage
from tests.rsmq import handlers
from tests.rsmq.node import NodeRsmq, NodeRsmqError
from tests.rsmq.running import Running, wait_until

BODIES = ["plain", "unicode: héllo wörld, 日本語, emoji 😀🎉", ("abcdefghé" * 7000)[:60_000] + "😀"]


@pytest.fixture
def node(redis_url: str, ns: str) -> Iterator[NodeRsmq]:
    client = NodeRsmq(redis_url, ns)
    yield client
    client.close()


@pytest.fixture
def py(redis_url: str, ns: str) -> Iterator[Rsmq]:
    with Rsmq(redis_url, ns=ns) as client:
        yield client


def _same(ours: RsmqMessage, theirs: dict[str, object]) -> None:
    assert theirs["id"] == ours.id and theirs["message"] == ours.message
    assert (theirs["rc"], theirs["fr"]) == (ours.rc, ours.fr)
    assert theirs["sent"] == pytest.approx(ours.sent, abs=0.001)


def test_bodies_ids_and_timestamps_both_ways(py: Rsmq, node: NodeRsmq) -> None:
    node.call("createQueue", qname="n2p")
    py.create_queue("p2n")
    start = time.time() * 1000
    for body in BODIES:
        sent_id = py.send_message("p2n", body)
        got = node.call("receiveMessage", qname="p2n")
        assert (got["id"], got["message"], got["rc"]) == (sent_id, body, 1)
        assert start - 2000 < got["sent"] <= got["fr"] + 1 < start + 60_000

        node_id = node.call("sendMessage", qname="n2p", message=body)
        ours = py.receive_message("n2p")
        assert ours is not None and (ours.id, ours.message, ours.rc) == (node_id, body, 1)
        assert len(node_id) == 32 and start - 2000 < ours.sent <= ours.fr + 1
    assert py.get_queue_attributes("p2n").totalrecv == len(BODIES)
    assert node.call("getQueueAttributes", qname="n2p")["totalrecv"] == len(BODIES)


def test_vt_expiry_rc_fr_change_visibility_and_pop(py: Rsmq, node: NodeRsmq) -> None:
    node.call("createQueue", qname="q", vt=60)
    message_id = node.call("sendMessage", qname="q", message="m")
    first = py.receive_message("q", vt=0)
    assert first is not None and first.rc == 1
    second = node.call("receiveMessage", qname="q")  # its vt ran out at once; hidden 60 s now
    _same(RsmqMessage(first.id, first.message, 2, first.fr, first.sent), second)
    assert node.call("receiveMessage", qname="q") == {}  # hidden for the queue's 60 s
    assert py.receive_message("q") is None
    assert py.change_message_visibility("q", message_id, 0) is True
    third = node.call("receiveMessage", qname="q")
    assert (third["rc"], third["fr"]) == (3, first.fr)
    assert node.call("changeMessageVisibility", qname="q", id=message_id, vt=0) == 1
    popped = py.pop_message("q")
    assert popped is not None and (popped.id, popped.rc, popped.fr) == (message_id, 4, first.fr)
    assert node.call("changeMessageVisibility", qname="q", id=message_id, vt=0) == 0
    assert node.call("popMessage", qname="q") == {}
    py.send_message("q", "again")
    node_popped = node.call("popMessage", qname="q")
    assert node_popped["message"] == "again" and node_popped["rc"] == 1


def test_queue_and_message_delay_and_attributes_agree(py: Rsmq, node: NodeRsmq) -> None:
    py.create_queue("slow", delay=60)
    node.call("sendMessage", qname="slow", message="queue delay")
    py.send_message("slow", "queue delay too")
    assert node.call("receiveMessage", qname="slow") == {} and py.receive_message("slow") is None
    node.call("createQueue", qname="fast")
    node.call("sendMessage", qname="fast", message="later", delay=60)
    py.send_message("fast", "later too", delay=60)
    assert node.call("receiveMessage", qname="fast") == {} and py.receive_message("fast") is None
    py.send_message("fast", "now")
    assert node.call("receiveMessage", qname="fast")["message"] == "now"

    node.call("setQueueAttributes", qname="fast", vt=45, maxsize=4096)
    py.set_queue_attributes("slow", delay=5)
    for qname in ("slow", "fast"):
        ours, theirs = py.get_queue_attributes(qname), node.call("getQueueAttributes", qname=qname)
        assert {k: theirs[k] for k in ("vt", "delay", "maxsize", "totalsent", "totalrecv", "msgs")} == {
            "vt": ours.vt, "delay": ours.delay, "maxsize": ours.maxsize,
            "totalsent": ours.totalsent, "totalrecv": ours.totalrecv, "msgs": ours.msgs,
        }  # fmt: skip
        assert (theirs["created"], theirs["hiddenmsgs"]) == (ours.created, ours.hiddenmsgs)
        assert abs(theirs["modified"] - ours.modified) <= 1
    assert py.get_queue_attributes("fast").vt == 45
    assert node.call("getQueueAttributes", qname="slow")["delay"] == 5


def test_maxsize_refused_on_both_sides(py: Rsmq, node: NodeRsmq) -> None:
    node.call("createQueue", qname="small", maxsize=1024)
    too_long = "x" * 1025
    with pytest.raises(MessageTooLong):
        py.send_message("small", too_long)
    with pytest.raises(NodeRsmqError) as refused:
        node.call("sendMessage", qname="small", message=too_long)
    assert refused.value.name == "messageTooLong"
    fits = "😀" * 512  # 1024 UTF-16 units on both sides
    py.send_message("small", fits)
    node.call("sendMessage", qname="small", message=fits)
    with pytest.raises(NodeRsmqError, match="messageTooLong"):
        node.call("sendMessage", qname="small", message=fits + "x")
    with pytest.raises(MessageTooLong):
        py.send_message("small", fits + "x")
    assert py.get_queue_attributes("small").totalsent == 2


def test_queues_created_and_deleted_on_one_side_seen_on_the_other(py: Rsmq, node: NodeRsmq) -> None:
    py.create_queue("a")
    node.call("createQueue", qname="b")
    assert sorted(node.call("listQueues")) == py.list_queues() == ["a", "b"]
    with pytest.raises(NodeRsmqError, match="queueExists"):
        node.call("createQueue", qname="a")
    node.call("deleteQueue", qname="a")
    with pytest.raises(QueueNotFound):
        py.send_message("a", "m")
    py.delete_queue("b")
    with pytest.raises(NodeRsmqError, match="queueNotFound"):
        node.call("sendMessage", qname="b", message="m")
    assert node.call("listQueues") == [] and py.list_queues() == []


def test_messages_deleted_on_one_side_are_gone_on_the_other(py: Rsmq, node: NodeRsmq) -> None:
    py.create_queue("q")
    ids = [py.send_message("q", "one"), node.call("sendMessage", qname="q", message="two")]
    assert node.call("deleteMessage", qname="q", id=ids[0]) == 1
    assert py.delete_message("q", ids[1]) is True
    assert py.delete_message("q", ids[0]) is False and node.call("deleteMessage", qname="q", id=ids[1]) == 0
    assert node.call("getQueueAttributes", qname="q")["msgs"] == 0


def test_a_realtime_node_sender_wakes_the_consumer(redis_url: str, ns: str, py: Rsmq, raw: Any) -> None:
    py.create_queue("q")
    handlers.runs.clear()
    running = Running(Consumer(redis_url, "q", handlers.record, ns=ns, realtime=True, poll_interval=300))
    wait_until(lambda: raw.pubsub_numsub(f"{ns}:rt:q")[0][1] == 1)
    time.sleep(0.2)  # the slot goes idle (a slot still receiving would find the message anyway)
    sender = NodeRsmq(redis_url, ns, realtime=True)
    try:
        sender.call("sendMessage", qname="q", message="from node")
        wait_until(lambda: handlers.runs == [("from node", 1)], timeout=60)  # far below the 300 s poll
    finally:
        sender.close()
        running.stop()
