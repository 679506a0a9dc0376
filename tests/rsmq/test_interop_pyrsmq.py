"""Interop with ``pyrsmq`` (PyPI ``PyRSMQ``, the Python port of RSMQ), both ways.

pyrsmq keeps the layout but not every rule: it does not check ``maxsize`` when it sends
(so only our side refuses a long message; a long message it sent is still read here) and
reports ``fr`` as ``ts``; its ``deleteMessage`` says True only for a message received before.
The test pins these facts, so a change in pyrsmq shows up here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from pqueue.rsmq import MessageTooLong, QueueNotFound, Rsmq

pyrsmq = pytest.importorskip("rsmq", reason="pyrsmq is in the dev extra")
from rsmq.cmd.exceptions import NoMessageInQueue, QueueDoesNotExist  # noqa: E402

BODIES = ["plain", "unicode: héllo wörld, 日本語, emoji 😀🎉", ("abcdefghé" * 7000)[:60_000] + "😀"]


@pytest.fixture
def other(redis_url: str, ns: str) -> Any:
    parts = urlsplit(redis_url)
    db = int((parts.path or "/0").strip("/") or 0)
    client = pyrsmq.RedisSMQ(host=parts.hostname, port=parts.port or 6379, ns=ns, options={"db": db})
    yield client
    client.client.close()


@pytest.fixture
def py(redis_url: str, ns: str) -> Iterator[Rsmq]:
    with Rsmq(redis_url, ns=ns) as client:
        yield client


def test_bodies_ids_rc_and_fr_both_ways(py: Rsmq, other: Any) -> None:
    py.create_queue("q", vt=60)
    start = time.time() * 1000
    for body in BODIES:
        ours = py.send_message("q", body)
        got = other.receiveMessage(qname="q", vt=0).execute()
        assert (got["id"], got["message"], got["rc"]) == (ours, body, 1)
        again = py.receive_message("q")
        assert again is not None and (again.id, again.rc, again.fr) == (ours, 2, got["ts"])
        assert start - 2000 < again.sent <= again.fr + 1
        theirs = other.sendMessage(qname="q", message=body).execute()
        received = py.receive_message("q")
        assert received is not None and (received.id, received.message, received.rc) == (theirs, body, 1)
        assert start - 2000 < received.sent <= received.fr + 1
    attrs = other.getQueueAttributes(qname="q").execute()
    ours_attrs = py.get_queue_attributes("q")
    assert (attrs["totalsent"], attrs["totalrecv"], attrs["msgs"]) == (
        ours_attrs.totalsent, ours_attrs.totalrecv, ours_attrs.msgs,
    ) == (6, 9, 6)  # fmt: skip


def test_delay_visibility_pop_and_delete(py: Rsmq, other: Any) -> None:
    other.createQueue(qname="q", delay=60).execute()
    py.send_message("q", "queue delay")
    with pytest.raises(NoMessageInQueue):
        other.receiveMessage(qname="q").execute()
    message_id = other.sendMessage(qname="q", message="now", delay=0).execute()
    got = py.receive_message("q")
    assert got is not None and got.id == message_id
    assert other.changeMessageVisibility(qname="q", id=message_id, vt=0).execute() is True
    popped = other.popMessage(qname="q").execute()
    assert (popped["id"], popped["rc"], popped["ts"]) == (message_id, 2, got.fr)
    assert py.change_message_visibility("q", message_id, 0) is False
    later = py.send_message("q", "later", delay=0)
    # pyrsmq says True only for a message received before (3 hash fields); it deletes either way
    assert other.deleteMessage(qname="q", id=later).execute() is False
    assert py.delete_message("q", later) is False
    received = py.send_message("q", "received", delay=0)
    assert py.receive_message("q", vt=60) is not None
    assert other.deleteMessage(qname="q", id=received).execute() is True
    other.setQueueAttributes(qname="q", vt=45).execute()
    assert py.get_queue_attributes("q").vt == 45


def test_maxsize_and_queues_deleted_on_one_side(py: Rsmq, other: Any) -> None:
    other.createQueue(qname="small", maxsize=1024).execute()
    with pytest.raises(MessageTooLong):
        py.send_message("small", "x" * 1025)
    long_id = other.sendMessage(qname="small", message="x" * 1025).execute()  # pyrsmq does not check
    got = py.pop_message("small")
    assert got is not None and got.id == long_id
    py.create_queue("mine")
    assert other.listQueues().execute() == {"small", "mine"}
    other.deleteQueue(qname="mine").execute()
    with pytest.raises(QueueNotFound):
        py.receive_message("mine")
    py.delete_queue("small")
    with pytest.raises(QueueDoesNotExist):
        other.sendMessage(qname="small", message="m").execute()
