"""Rows to jobs without a JVM: the writer's options and the Arrow-batch conversion (pyarrow only)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from pqueue.errors import InvalidOption, InvalidPayload
from pqueue.ids import key_id
from pqueue.job import JobStatus
from pqueue.spark.options import ReadOptions, WriteOptions, parse_since
from pqueue.sync import Client
from tests.services import require_spark

require_spark()

import pyarrow as pa  # noqa: E402

from pqueue.spark.history import JOB_ARROW_SCHEMA, jobs_to_batch  # noqa: E402
from pqueue.spark.rows import jobs  # noqa: E402
from pqueue.spark.writer import EnqueueCounts, enqueue_batches  # noqa: E402

pytestmark = pytest.mark.spark

BASE = {"dsn": "memory://rows", "type": "send", "queue": "emails"}


def test_writer_refuses_to_run_without_a_row_key_unless_told() -> None:
    with pytest.raises(InvalidOption, match="idColumn"):
        WriteOptions.parse(BASE)
    assert WriteOptions.parse({**BASE, "allowDuplicates": "true"}).allow_duplicates
    assert WriteOptions.parse({**BASE, "IDCOLUMN": "user_id"}).key_columns == ("user_id",)
    assert WriteOptions.parse({**BASE, "keyColumns": "a, b"}).key_columns == ("a", "b")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"idColumn": "a", "keyColumns": "b"}, "not both"),
        ({"idColumn": "a", "maxRetries": "-1"}, "maxRetries"),
        ({"idColumn": "a", "batchSize": "many"}, "batchSize"),
        ({"idColumn": "a", "runAtColumn": "r", "delayColumn": "d"}, "not both"),
        ({"idColumn": "a", "uniqueKeyColumn": "u"}, "uniqueFor"),
        ({"idColumn": "a", "colour": "red"}, "unknown option"),
        ({"idColumn": "a", "queue": "bad queue"}, "queue"),
    ],
)
def test_bad_writer_options_name_the_option(extra: dict[str, str], fragment: str) -> None:
    with pytest.raises(Exception, match=fragment):
        WriteOptions.parse({**BASE, **extra})


def test_reader_options() -> None:
    options = ReadOptions.parse({"dsn": "memory://x", "status": "dead,completed", "since": "2026-01-01"})
    assert options.statuses == (JobStatus.DEAD, JobStatus.COMPLETED)
    assert options.since == datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    with pytest.raises(InvalidOption, match="status"):
        ReadOptions.parse({"dsn": "memory://x", "status": "sleeping"})
    now = datetime(2026, 1, 8, tzinfo=UTC)
    assert parse_since("7d", now=now) == datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    with pytest.raises(InvalidOption, match="since"):
        parse_since("last week")


def test_payload_is_the_row_and_the_id_comes_from_the_key() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "user_id": [1, 2],
            "at": [datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=UTC), None],
            "day": [date(2026, 1, 2), date(2026, 1, 3)],
            "price": pa.array([Decimal("1.50"), Decimal("2.00")], pa.decimal128(5, 2)),
            "tags": [["a"], []],
        }
    )
    made = jobs(batch, WriteOptions.parse({**BASE, "idColumn": "user_id"}))
    assert made.ids == [key_id("emails", "send", "1"), key_id("emails", "send", "2")]
    assert made.payloads[0] == {
        "user_id": 1,
        "at": "2026-01-02T03:04:05.600000Z",
        "day": "2026-01-02",
        "price": "1.50",
        "tags": ["a"],
    }
    assert made.tasks is None


def test_payload_column_run_at_and_unique_key_make_tasks() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "k1": ["a", "a"],
            "k2": [1, 2],
            "body": ['{"x": 1}', "[1, 2]"],
            "when": [datetime(2030, 1, 1, tzinfo=UTC), None],
            "u": ["one", None],
        }
    )
    options = WriteOptions.parse(
        {
            **BASE,
            "keyColumns": "k1,k2",
            "payloadColumn": "body",
            "runAtColumn": "when",
            "uniqueKeyColumn": "u",
            "uniqueFor": "60",
        }
    )
    made = jobs(batch, options)
    assert made.ids == [key_id("emails", "send", '["a",1]'), key_id("emails", "send", '["a",2]')]
    assert made.payloads == [{"x": 1}, [1, 2]]
    assert made.tasks is not None
    first, second = made.tasks
    assert first.run_at == datetime(2030, 1, 1, tzinfo=UTC) and first.unique_key == "one"
    assert first.unique_for == 60 and second.unique_key is None and second.unique_for is None
    assert first.to_spec().id == made.ids[0]


def test_priority_column_gives_each_row_its_priority() -> None:
    batch = pa.RecordBatch.from_pydict({"k": [1, 2, 3], "level": [50, None, -100]})
    options = WriteOptions.parse({**BASE, "idColumn": "k", "priorityColumn": "level"})
    made = jobs(batch, options)
    assert made.tasks is not None
    assert [task.to_spec().priority for task in made.tasks] == [50, 0, -100]
    assert made.payloads == [{"k": 1}, {"k": 2}, {"k": 3}]  # the column is an option, not payload
    bad = jobs(pa.RecordBatch.from_pydict({"k": [1], "level": [101]}), options).tasks
    assert bad is not None
    with pytest.raises(InvalidOption, match="priority"):
        bad[0].to_spec()


def test_bad_rows_are_refused_before_anything_is_sent() -> None:
    options = WriteOptions.parse({**BASE, "idColumn": "k", "payloadColumn": "body"})
    with pytest.raises(InvalidPayload, match="null"):
        jobs(pa.RecordBatch.from_pydict({"k": [None], "body": ["{}"]}), options)
    with pytest.raises(InvalidPayload, match="not JSON"):
        jobs(pa.RecordBatch.from_pydict({"k": [1], "body": ["{nope"]}), options)
    binary = WriteOptions.parse({**BASE, "idColumn": "k"})
    with pytest.raises(InvalidPayload, match="binary"):
        jobs(pa.RecordBatch.from_pydict({"k": [1], "b": [b"\x00"]}), binary)


def test_a_partition_written_twice_adds_nothing_the_second_time() -> None:
    options = WriteOptions.parse({**BASE, "dsn": "memory://rows-twice", "idColumn": "k", "batchSize": "3"})
    batch = pa.RecordBatch.from_pydict({"k": list(range(10)), "v": ["x"] * 10})
    assert enqueue_batches([batch], options) == EnqueueCounts(rows=10, inserted=10, present=0)
    assert enqueue_batches([batch.slice(0, 4), batch.slice(4)], options) == EnqueueCounts(10, 0, 10)
    with Client("memory://rows-twice") as client:
        assert client.stats().total(JobStatus.PENDING, "emails") == 10
        job = client.get_job(key_id("emails", "send", "7"))
        assert job.payload == {"k": 7, "v": "x"} and job.type == "send"


def test_jobs_become_rows_of_the_documented_schema() -> None:
    with Client("memory://rows-history") as client:
        [result] = client.enqueue_map("send", [{"to": "a@b"}], queue="emails", meta={"src": "t"})
        job = client.get_job(result.id)
    batch = jobs_to_batch([job])
    assert batch.schema == JOB_ARROW_SCHEMA
    row = batch.to_pylist()[0]
    assert row["id"] == result.id and row["status"] == "pending" and row["attempt"] == 0
    assert json.loads(row["payload"]) == {"to": "a@b"} and row["meta"] == [("src", "t")]
    assert row["started_at"] is None and row["wait_s"] is None


@pytest.mark.parametrize(
    ("extra", "retries", "unset"),
    [({}, 3, {"max_retries", "timeout"}), ({"maxRetries": "0"}, 0, {"timeout"})],
)
def test_max_retries_left_out_is_left_to_the_task(
    extra: dict[str, str], retries: int, unset: set[str]
) -> None:
    """Without ``maxRetries`` the jobs record it as unset: the worker takes the task's
    declaration, as for any job enqueued without the router (ADR 0157)."""
    dsn = f"memory://rows-retries-{retries}"
    options = WriteOptions.parse({**BASE, "dsn": dsn, "idColumn": "k", **extra})
    assert enqueue_batches([pa.RecordBatch.from_pydict({"k": [1]})], options).inserted == 1
    with Client(dsn) as client:
        job = client.get_job(key_id("emails", "send", "1"))
    assert (job.max_retries, job.unset) == (retries, unset)
