"""The memory backend's mutable job record and its conversion to a public :class:`Job`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pqueue.clock import to_datetime
from pqueue.job import NONE_UNSET, ErrorInfo, Job, JobSpec, JobStatus
from pqueue.limits import Limit


@dataclass(slots=True)
class Record:
    """One stored job. Mutated only by :class:`~pqueue.brokers.memory.store.MemoryStore` and its
    parts (flows, admin, limit groups) under the store's lock."""

    id: str
    type: str
    queue: str
    payload_json: str
    status: JobStatus
    run_at: float
    created_at: float
    max_retries: int
    max_recoveries: int
    timeout: float | None
    unique_key: str | None
    idempotency_key: str | None
    meta: dict[str, str]
    order: int = 0  # enqueue order; renewed each time the job is put back in line
    attempt: int = 0
    recoveries: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    errors: tuple[ErrorInfo, ...] = ()
    result_json: str | None = None
    token: str | None = None
    lease_expires_at: float = 0.0
    worker_id: str | None = None
    depends_on: tuple[str, ...] = ()
    on_parent_failure: str = "cancel"
    unfinished: set[str] | None = None  # parents not yet settled, while waiting
    children: list[str] | None = None  # dependants to settle when this job finishes
    parent_results: dict[str, str | None] | None = None  # parent id -> result JSON
    limit: Limit | None = None
    unique_until_done: bool = False  # free the unique key at completion (ADR 0152)
    priority: int = 0
    unset: frozenset[str] = NONE_UNSET  # run-time options left to the handler (ADR 0157)

    @classmethod
    def from_spec(cls, spec: JobSpec, *, now: float, order: int) -> Record:
        run_at = spec.run_at if spec.run_at is not None else now + (spec.delay or 0.0)
        return cls(
            id=spec.id,
            type=spec.type,
            queue=spec.queue,
            payload_json=spec.payload_json,
            status=JobStatus.SCHEDULED if run_at > now else JobStatus.PENDING,
            run_at=run_at,
            created_at=now,
            max_retries=spec.max_retries,
            max_recoveries=spec.max_recoveries,
            timeout=spec.timeout,
            unique_key=spec.unique_key,
            idempotency_key=spec.idempotency_key,
            meta=dict(spec.meta),
            order=order,
            depends_on=spec.depends_on,
            on_parent_failure=spec.on_parent_failure,
            limit=spec.limit,
            unique_until_done=spec.unique_until == "done",
            priority=spec.priority,
            unset=spec.unset,
        )

    def to_job(self) -> Job:
        """A frozen snapshot; the payload is decoded afresh so handlers cannot share it."""
        return Job(
            id=self.id,
            type=self.type,
            queue=self.queue,
            payload=json.loads(self.payload_json),
            status=self.status,
            attempt=self.attempt,
            max_retries=self.max_retries,
            recoveries=self.recoveries,
            max_recoveries=self.max_recoveries,
            run_at=to_datetime(self.run_at),
            created_at=to_datetime(self.created_at),
            timeout=self.timeout,
            unique_key=self.unique_key,
            idempotency_key=self.idempotency_key,
            started_at=None if self.started_at is None else to_datetime(self.started_at),
            finished_at=None if self.finished_at is None else to_datetime(self.finished_at),
            errors=self.errors,
            result=None if self.result_json is None else json.loads(self.result_json),
            meta=dict(self.meta),
            depends_on=self.depends_on,
            parent_results=_results(self.depends_on, self.parent_results),
            limit_key=None if self.limit is None else self.limit.key,
            priority=self.priority,
            unset=self.unset,
        )


def _results(order: tuple[str, ...], results: dict[str, str | None] | None) -> dict[str, Any]:
    """Parent results decoded, in ``depends_on`` order."""
    if not results:
        return {}
    decoded: dict[str, Any] = {}
    for parent in order:
        if parent in results:
            text = results[parent]
            decoded[parent] = None if text is None else json.loads(text)
    return decoded
