"""UUIDv7 job ids."""

from __future__ import annotations

import os
import uuid

from pqueue.ids import is_job_id, new_id, new_ids


def test_ids_are_version_7_uuids() -> None:
    parsed = uuid.UUID(new_id())
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_ids_sort_in_creation_order_and_are_unique() -> None:
    ids = [new_id() for _ in range(50_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_ids_made_in_bulk_are_the_same_kind_and_keep_the_order() -> None:
    before = new_id()
    bulk = new_ids(10_000)  # more than one millisecond's 4,096: the sequence borrows ahead
    after = new_id()
    assert [before, *bulk, after] == sorted([before, *bulk, after])
    assert len(set(bulk)) == len(bulk) and new_ids(0) == []
    assert all(uuid.UUID(i).version == 7 and uuid.UUID(i).variant == uuid.RFC_4122 for i in bulk)
    assert all(is_job_id(i) for i in bulk)


def test_forked_child_does_not_repeat_the_parent_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(write, "\n".join(new_id() for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    parent = {new_id() for _ in range(100)}
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split("\n"))
    os.waitpid(pid, 0)
    assert len(child) == 100 and not parent & child


def test_is_job_id() -> None:
    assert is_job_id(new_id())
    assert not is_job_id("nope") and not is_job_id(None) and not is_job_id(new_id().upper())
