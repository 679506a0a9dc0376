"""Ids from row keys (pqueue.ids.key_id) and build_specs / enqueue_map with chosen ids."""

from __future__ import annotations

import uuid

import pytest

from pqueue.broker import JobScan
from pqueue.errors import InvalidName, InvalidOption
from pqueue.ids import is_job_id, key_id
from pqueue.job import JobStatus
from pqueue.spec import build_specs
from pqueue.sync import Client


def test_key_id_is_a_stable_uuid_per_queue_type_and_key() -> None:
    first = key_id("emails", "send", "user-42")
    assert first == key_id("emails", "send", "user-42")
    assert is_job_id(first) and uuid.UUID(first).version == 8
    others = {
        key_id("emails", "send", "user-43"),
        key_id("other", "send", "user-42"),
        key_id("emails", "x", "user-42"),
    }
    assert first not in others and len(others) == 3
    assert key_id("q", "t", "a") != key_id("q", "t", "a ")


def test_build_specs_takes_the_given_ids_and_checks_them() -> None:
    ids = [key_id("q", "t", str(i)) for i in range(3)]
    specs = build_specs("t", [1, 2, 3], queue="q", job_ids=ids)
    assert [s.id for s in specs] == ids and [s.payload_json for s in specs] == ["1", "2", "3"]
    with pytest.raises(InvalidOption):
        build_specs("t", [1, 2], job_ids=ids)
    with pytest.raises(InvalidName):
        build_specs("t", [1], job_ids=["not-an-id"])


def test_enqueue_map_with_the_same_ids_twice_adds_nothing_the_second_time() -> None:
    ids = [key_id("q", "t", str(i)) for i in range(5)]
    with Client("memory://key-ids-twice") as client:
        first = client.enqueue_map("t", range(5), queue="q", job_ids=ids)
        again = client.enqueue_map("t", range(5), queue="q", job_ids=ids)
        assert [r.created for r in first] == [True] * 5 and [r.created for r in again] == [False] * 5
        assert client.stats().total(JobStatus.PENDING, "q") == 5


def test_sync_client_scans_every_job_in_pages() -> None:
    with Client("memory://sync-scan") as client:
        client.enqueue_map("t", range(25), queue="q")
        pages = list(client.scan_jobs(JobScan(queue="q", page_size=10)))
        assert [len(p) for p in pages] == [10, 10, 5]
        assert sorted(job.payload for page in pages for job in page) == list(range(25))
        # a scan dropped half-way leaves the client usable
        for _ in client.scan_jobs(JobScan(page_size=10)):
            break
        assert client.stats().total(JobStatus.PENDING) == 25
