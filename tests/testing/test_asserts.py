"""``assert_enqueued``: passes on a match, and a failure lists what was enqueued."""

from __future__ import annotations

import pytest

from pqueue import AsyncClient, Client
from pqueue.testing import assert_enqueued, assert_enqueued_async, assert_not_enqueued, enqueued


def test_a_match_returns_the_jobs(pqueue_client: Client) -> None:
    pqueue_client.enqueue("email:send", {"to": "a@example.com"})
    pqueue_client.enqueue("email:send", {"to": "b@example.com"}, queue="bulk")
    [job] = assert_enqueued(pqueue_client, "email:send", payload={"to": "b@example.com"})
    assert job.queue == "bulk"
    assert len(assert_enqueued(pqueue_client, "email:send")) == 2
    assert_enqueued(pqueue_client, "email:send", queue="bulk", count=1)
    assert_not_enqueued(pqueue_client, "sms:send")
    assert [j.payload for j in enqueued(pqueue_client, "email:send")] == [
        {"to": "a@example.com"},
        {"to": "b@example.com"},
    ]


def test_a_miss_lists_what_was_enqueued(pqueue_client: Client) -> None:
    pqueue_client.enqueue("email:send", {"to": "a@example.com"})
    with pytest.raises(AssertionError) as caught:
        assert_enqueued(pqueue_client, "email:send", payload={"to": "b@example.com"}, queue="default")
    assert str(caught.value) == (
        "expected a job 'email:send' payload={'to': 'b@example.com'} queue='default' enqueued at least"
        " once, found 0.\nEnqueued (1 job(s)):\n"
        "  'email:send' queue='default' payload={'to': 'a@example.com'} (pending)"
    )


def test_counts_and_none_payloads(pqueue_client: Client) -> None:
    pqueue_client.enqueue("tick")
    assert_enqueued(pqueue_client, "tick", payload=None, count=1)
    with pytest.raises(AssertionError, match="enqueued 2 time"):
        assert_enqueued(pqueue_client, "tick", count=2)
    with pytest.raises(AssertionError, match="found 1"):
        assert_not_enqueued(pqueue_client, "tick")


def test_nothing_enqueued_says_so(pqueue_client: Client) -> None:
    with pytest.raises(AssertionError, match="Nothing was enqueued"):
        assert_enqueued(pqueue_client, "tick")


async def test_async_form(pqueue_async_client: AsyncClient) -> None:
    await pqueue_async_client.enqueue("tick", 1)
    [job] = await assert_enqueued_async(pqueue_async_client, "tick", payload=1)
    assert job.type == "tick"
    with pytest.raises(AssertionError, match="'tick' queue='default' payload=1"):
        await assert_enqueued_async(pqueue_async_client, "tick", payload=2)


def test_each_test_gets_an_empty_store(pqueue_client: Client, pqueue_memory_dsn: str) -> None:
    assert pqueue_client.dsn == pqueue_memory_dsn
    assert enqueued(pqueue_client) == []
