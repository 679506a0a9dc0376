"""Bad input: a clear, typed error, and nothing written."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest

from pqueue.broker import FullBroker
from pqueue.errors import InvalidJob, InvalidName, InvalidOption, InvalidPayload, JobNotFound, PayloadTooLarge
from pqueue.ids import new_id
from pqueue.spec import DEFAULT_MAX_PAYLOAD_BYTES, build_spec
from pqueue.testing.contract.helpers import total


async def _enqueue_batch_with(broker: FullBroker, bad: dict[str, object]) -> None:
    """A batch of good jobs with one bad one in the middle: it must fail as a whole."""
    specs = [build_spec("contract:job", 1), build_spec("contract:job", 2)]
    specs.insert(1, build_spec(**bad))  # type: ignore[arg-type]
    await broker.enqueue(specs)


BAD = [
    pytest.param({"job_type": "t", "payload": object()}, InvalidPayload, id="object-payload"),
    pytest.param({"job_type": "t", "payload": {1, 2}}, InvalidPayload, id="set-payload"),
    pytest.param({"job_type": "t", "payload": b"bytes"}, InvalidPayload, id="bytes-payload"),
    pytest.param({"job_type": "t", "payload": Decimal("1.5")}, InvalidPayload, id="decimal-payload"),
    pytest.param({"job_type": "t", "payload": float("nan")}, InvalidPayload, id="nan-payload"),
    pytest.param({"job_type": "t", "payload": datetime(2026, 1, 1)}, InvalidPayload, id="datetime-payload"),
    pytest.param(
        {"job_type": "t", "payload": {"text": "bad \ud800 half"}}, InvalidPayload, id="lone-surrogate"
    ),
    pytest.param(
        {"job_type": "t", "payload": "x" * (DEFAULT_MAX_PAYLOAD_BYTES + 1)}, PayloadTooLarge, id="oversized"
    ),
    pytest.param(
        {"job_type": "t", "payload": "☃" * (DEFAULT_MAX_PAYLOAD_BYTES // 3)},
        PayloadTooLarge,
        id="oversized-utf8",
    ),
    pytest.param({"job_type": "t", "queue": "has space"}, InvalidName, id="queue-space"),
    pytest.param({"job_type": "t", "queue": "{slot}"}, InvalidName, id="queue-braces"),
    pytest.param({"job_type": "t", "queue": ""}, InvalidName, id="queue-empty"),
    pytest.param({"job_type": "t", "queue": "q" * 65}, InvalidName, id="queue-too-long"),
    pytest.param({"job_type": "bad type!"}, InvalidName, id="job-type"),
    pytest.param({"job_type": "t", "delay": -1}, InvalidOption, id="negative-delay"),
    pytest.param({"job_type": "t", "delay": float("inf")}, InvalidOption, id="infinite-delay"),
    pytest.param({"job_type": "t", "run_at": datetime(2030, 1, 1)}, InvalidOption, id="naive-run-at"),
    pytest.param({"job_type": "t", "max_retries": -1}, InvalidOption, id="negative-retries"),
    pytest.param({"job_type": "t", "unique_key": "k"}, InvalidOption, id="unique-key-without-ttl"),
    pytest.param({"job_type": "t", "unique_for": 0}, InvalidOption, id="zero-unique-ttl"),
    pytest.param({"job_type": "t", "meta": {"k": 1}}, InvalidOption, id="non-string-meta"),
    pytest.param({"job_type": "t", "job_id": "my-id"}, InvalidName, id="bad-job-id"),
    pytest.param({"job_type": "t", "priority": 101}, InvalidOption, id="priority-too-high"),
    pytest.param({"job_type": "t", "priority": -101}, InvalidOption, id="priority-too-low"),
    pytest.param({"job_type": "t", "priority": 1.5}, InvalidOption, id="priority-not-int"),
    pytest.param({"job_type": "t", "priority": True}, InvalidOption, id="priority-bool"),
    pytest.param({"job_type": "t", "priority": "5"}, InvalidOption, id="priority-text"),
]


@pytest.mark.asyncio
class BadInputContract:
    @pytest.mark.parametrize(("bad", "error"), BAD)
    async def test_bad_job_is_refused_and_nothing_is_written(
        self, broker: FullBroker, bad: dict[str, object], error: type[InvalidJob]
    ) -> None:
        with pytest.raises(error) as info:
            await _enqueue_batch_with(broker, bad)
        assert isinstance(info.value, InvalidJob) and isinstance(info.value, ValueError)
        assert str(info.value)  # says what is wrong
        assert await total(broker) == 0
        assert await broker.list_queues() == []

    async def test_unknown_job_id_changes_nothing(self, broker: FullBroker) -> None:
        for call in (broker.get_job, broker.cancel):
            with pytest.raises(JobNotFound):
                await call(new_id())
        assert await broker.requeue_dead(job_ids=[new_id()]) == 0
        assert await broker.purge_dead(job_ids=[new_id()]) == 0
        assert await total(broker) == 0
