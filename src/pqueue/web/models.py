"""Request and response bodies, as pydantic models: they are the OpenAPI document.

The enqueue rules themselves (names, ranges, payload size) live once, in
:mod:`pqueue.spec`, which checks every job; the models check JSON types and describe each
rule in the schema with the pattern or bound :mod:`pqueue.spec` uses (``doc_pattern``
derives the JSON-Schema form of its regexes, ``MAX_COUNT`` is its own constant).
Numbers are JSON numbers only: a string or a boolean where a number is expected is
refused rather than converted, so the API accepts exactly what its schema says.

Answers are built by the model objects' own ``to_dict()`` (``Job``, ``Stats``,
``WorkerInfo``); the ``*Out`` models here describe those shapes for the document and for
the schema tests, which check every answer against them.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.config import JsonDict

from pqueue.ids import UUID_RE
from pqueue.job import JobStatus
from pqueue.limits import MAX_CONCURRENCY, RATE_RE
from pqueue.options import OPTION_NAMES
from pqueue.spec import (
    JOB_TYPE_RE,
    KEY_RE,
    MAX_COUNT,
    MAX_PARENTS,
    MAX_PRIORITY,
    MAX_SECONDS,
    MIN_PRIORITY,
    PARENT_FAILURE_POLICIES,
    QUEUE_NAME_RE,
    UNIQUE_UNTIL,
)


def doc_pattern(regex: re.Pattern[str]) -> str:
    """A Python regex of :mod:`pqueue.spec` as an ECMA (JSON Schema) pattern."""
    return regex.pattern.replace("\\Z", "$")


def _json_number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a JSON number")
    return value


def _json_text(value: object) -> object:
    if not isinstance(value, str):
        raise ValueError("must be a JSON string")
    return value


# The bound comes before the validator so pydantic writes it into the schema as JSON
# Schema's minimum / exclusiveMinimum / maximum.
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False), BeforeValidator(_json_number)]
PositiveSeconds = Annotated[
    float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False), BeforeValidator(_json_number)
]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT), BeforeValidator(_json_number)]
Timestamp = Annotated[AwareDatetime, BeforeValidator(_json_text)]

QueueName = Annotated[str, Field(json_schema_extra={"pattern": doc_pattern(QUEUE_NAME_RE)})]
JobType = Annotated[str, Field(json_schema_extra={"pattern": doc_pattern(JOB_TYPE_RE)})]
Key = Annotated[str, Field(json_schema_extra={"pattern": doc_pattern(KEY_RE)})]
JobId = Annotated[str, Field(json_schema_extra={"pattern": doc_pattern(UUID_RE)})]
Rate = Annotated[str, Field(json_schema_extra={"pattern": doc_pattern(RATE_RE)})]
Concurrency = Annotated[int, Field(ge=1, le=MAX_CONCURRENCY), BeforeValidator(_json_number)]
Priority = Annotated[int, Field(ge=MIN_PRIORITY, le=MAX_PRIORITY), BeforeValidator(_json_number)]
ParentFailure = Annotated[str, Field(json_schema_extra={"enum": list(PARENT_FAILURE_POLICIES)})]
UniqueUntil = Annotated[str, Field(json_schema_extra={"enum": list(UNIQUE_UNTIL)})]


def _given(field: str, json_type: str) -> JsonDict:
    """JSON Schema for "``field`` is present and not null" (nullable fields take null)."""
    return {"properties": {field: {"type": json_type}}, "required": [field]}


_HAS_PARENTS: JsonDict = {
    "properties": {"depends_on": {"type": "array", "minItems": 1}},
    "required": ["depends_on"],
}
"""JSON Schema for "the job names at least one parent"."""


class JobIn(BaseModel):
    """One job to enqueue; the options of ``Client.enqueue``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            # The rules between options (pqueue.spec), so that every body the schema allows
            # is one the enqueue accepts: unique_key needs unique_for; delay and run_at
            # exclude each other; limit_key needs rate or concurrency; a job with parents
            # takes no unique key (it may take a limit).
            "allOf": [
                {"if": _given("unique_key", "string"), "then": _given("unique_for", "number")},
                {
                    "if": {"properties": {"unique_until": {"const": "done"}}, "required": ["unique_until"]},
                    "then": _given("unique_for", "number"),
                },
                {"not": {"allOf": [_given("delay", "number"), _given("run_at", "string")]}},
                {
                    "if": _given("limit_key", "string"),
                    "then": {"anyOf": [_given("rate", "string"), _given("concurrency", "integer")]},
                },
                {"if": _HAS_PARENTS, "then": {"not": _given("unique_for", "number")}},
            ],
            "examples": [{"type": "email.send", "payload": {"to": "ada@example.com"}, "queue": "default"}],
        },
    )

    type: JobType = Field(description="The job type a worker's router handles.")
    payload: Any = Field(default=None, description="Any JSON value (at most 1 MiB encoded, by default).")
    queue: QueueName | None = Field(default=None, description="Queue name; default 'default'.")
    delay: Seconds | None = Field(default=None, description="Seconds to wait before the job is due.")
    run_at: Timestamp | None = Field(default=None, description="When the job is due (RFC 3339 with offset).")
    max_retries: Count | None = Field(default=None, description="Retries after the first attempt; default 3.")
    unique_for: PositiveSeconds | None = Field(
        default=None, description="Seconds a unique key is held (derived from type, queue, payload if none)."
    )
    unique_key: Key | None = Field(default=None, description="Explicit unique key (needs unique_for).")
    unique_until: UniqueUntil = Field(
        default="ttl",
        description="'ttl': hold the unique key for all of unique_for; 'done': free it when the job "
        "completes (needs unique_for).",
    )
    idempotency_key: Key | None = Field(default=None, description="Run at most once per key.")
    timeout: PositiveSeconds | None = Field(default=None, description="Seconds a handler may run.")
    priority: Priority | None = Field(
        default=None,
        description="-100..100: within its queue, higher runs sooner; default the handler's, else 0.",
    )
    depends_on: list[JobId] | None = Field(
        default=None,
        max_length=MAX_PARENTS,
        json_schema_extra={"uniqueItems": True},
        description="Jobs that must complete first; until then this one is 'waiting' (docs/workflows.md).",
    )
    on_parent_failure: ParentFailure = Field(
        default="cancel", description="When a parent dies or is cancelled: cancel this job too, or run it."
    )
    limit_key: Key | None = Field(
        default=None, description="The job's limit group in its queue (docs/limits.md)."
    )
    rate: Rate | None = Field(
        default=None, description="The group's rate limit, such as '100/s', '30/m', '500/h'."
    )
    concurrency: Concurrency | None = Field(
        default=None, description="The most jobs of the group running at once."
    )


JOB_IN_NOT_OFFERED: dict[str, str] = {
    "meta": "not offered over HTTP yet (ADR 0132): the schema would need its key and size rules",
    "max_recoveries": "not offered over HTTP: a worker-crash budget is the handler's business",
    "job_id": "not offered over HTTP yet (ADR 0132): a caller-chosen id needs its own schema rules",
}
"""The job options (:data:`pqueue.options.OPTION_NAMES`) ``JobIn`` does not take, and why;
tests/unit/test_option_parity.py fails when an option is neither a field nor named here."""
JOB_IN_OPTIONS: tuple[str, ...] = tuple(name for name in OPTION_NAMES if name in JobIn.model_fields)
"""The job options ``JobIn`` takes, each a field of the same name and meaning."""


class BatchIn(BaseModel):
    """Many jobs, enqueued together in one broker round trip or not at all."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            # A batch with parents is stored as one graph, which holds no unique job
            # (pqueue.broker_flows.plan_flow).
            "if": {"properties": {"jobs": {"contains": _HAS_PARENTS}}, "required": ["jobs"]},
            "then": {"properties": {"jobs": {"items": {"not": _given("unique_for", "number")}}}},
        },
    )

    jobs: list[JobIn] = Field(min_length=1, description="The jobs, at most the configured batch size.")


class NamedPriority(StrEnum):
    """Seed 002's named priorities (``POST /task``)."""

    HIGH = "high"
    DEFAULT = "default"
    LOW = "low"


PRIORITY_QUEUES: dict[NamedPriority, str] = {
    NamedPriority.HIGH: "critical",
    NamedPriority.DEFAULT: "default",
    NamedPriority.LOW: "low",
}
"""The queue each priority means: the worker's default queues (``critical:6,default:3,low:1``),
so a priority is served by its weight (ADR 0154)."""


class TaskIn(BaseModel):
    """One job as seed 002's producers send it (``POST /task``, ``POST /tasks``): an alias
    of :class:`JobIn` whose ``priority`` names the queue and ``execute_at`` the due time."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"type": "email.send", "payload": {"to": "ada@example.com"}, "priority": "high"}]
        },
    )

    type: JobType = Field(description="The job type a worker's router handles.")
    payload: Any = Field(default=None, description="Any JSON value (at most 1 MiB encoded, by default).")
    priority: NamedPriority = Field(
        default=NamedPriority.DEFAULT, description="high, default or low: the queue critical, default or low."
    )
    execute_at: Timestamp | None = Field(
        default=None, description="When the job is due (RFC 3339 with offset); default now."
    )

    def to_job(self) -> JobIn:
        """The :class:`JobIn` this stands for (its fields were checked here already, with
        the same types: built without checking them again)."""
        return JobIn.model_construct(
            type=self.type, payload=self.payload, queue=PRIORITY_QUEUES[self.priority], run_at=self.execute_at
        )


class EnqueuedOut(BaseModel):
    """The answer to ``POST /jobs``."""

    id: str
    queue: str
    status: JobStatus
    run_at: datetime = Field(description="When the job is due (the API server's estimate for a new job).")
    created: bool = Field(description="False when a unique key or idempotency matched an existing job.")


class BatchItemOut(BaseModel):
    id: str
    created: bool


class BatchOut(BaseModel):
    """The answer to ``POST /jobs/batch``, in request order."""

    jobs: list[BatchItemOut]


class ErrorOut(BaseModel):
    """Every error answer."""

    error: str = Field(description="A stable code: unauthorized, forbidden, too_large, invalid_job, ...")
    detail: str = Field(
        description="What was wrong, for people: the field, and in a batch the job as jobs[i] "
        "(jobs[1].priority: ...)."
    )


class ErrorRecordOut(BaseModel):
    kind: str
    message: str
    traceback: str
    attempt: int
    at: datetime | None


class JobOut(BaseModel):
    """A stored job (``Job.to_dict()``)."""

    id: str
    type: str
    queue: str
    status: JobStatus
    payload: Any
    attempt: int
    max_retries: int
    recoveries: int
    max_recoveries: int
    priority: int = Field(description="-100..100: within its queue, higher runs sooner.")
    run_at: datetime | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    timeout: float | None
    unique_key: str | None
    idempotency_key: str | None
    meta: dict[str, str]
    depends_on: list[str] = Field(description="The jobs this one waited for (depends_on at enqueue).")
    limit_key: str | None = Field(description="Its limit group (docs/limits.md); null for none.")
    result: Any
    errors: list[ErrorRecordOut]


class JobListOut(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last.")


class CancelOut(BaseModel):
    id: str
    cancelled: bool


class WorkerOut(BaseModel):
    """A live worker (``WorkerInfo.to_dict()``)."""

    id: str
    host: str
    pid: int
    queues: list[str]
    concurrency: int
    started_at: datetime | None
    last_seen: datetime | None
    meta: dict[str, str]


class WorkersOut(BaseModel):
    workers: list[WorkerOut]


class LimitOut(BaseModel):
    """One rate/concurrency limit group (docs/limits.md)."""

    queue: str
    key: str = Field(description="The group's limit key within its queue.")
    active: int
    waiting: int
    concurrency: int | None = Field(description="The most active jobs allowed; null: no such limit.")
    rate: float | None = Field(description="Tokens per second; null: no rate limit.")
    tokens: float | None = Field(description="Tokens in the bucket now; null without a rate.")


class StatsOut(BaseModel):
    """``Stats.to_dict()``: counts by queue and status, ages and rates in seconds, workers,
    limit groups."""

    queues: dict[str, dict[str, int]]
    totals: dict[str, int]
    oldest_pending_age: dict[str, float]
    done_per_second: dict[str, float]
    workers: list[WorkerOut]
    paused: list[str] = Field(default_factory=list, description="Paused queues.")
    limits: list[LimitOut]


class QueueOut(BaseModel):
    name: str
    jobs: dict[str, int] = Field(description="Jobs per status.")
    oldest_pending_age: float | None = Field(description="Seconds the oldest due job has waited.")
    done_per_second: float = Field(description="Jobs finished per second over the last minute.")
    paused: bool = Field(default=False, description="Workers claim nothing from it until resumed.")


class QueuesOut(BaseModel):
    queues: list[QueueOut]


class RequeueIn(BaseModel):
    """Which dead jobs to requeue: ``ids``, or every dead job of ``queue``; ``{}`` requeues
    every dead job (``Client.requeue_dead()``)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] | None = Field(default=None, max_length=10_000, description="Only these jobs.")
    queue: QueueName | None = Field(default=None, description="Only this queue's dead jobs.")


class CountOut(BaseModel):
    count: int = Field(description="How many jobs were affected.")


class SessionOut(BaseModel):
    role: str = Field(description="admin or read: what this token may do.")


class LinkOut(BaseModel):
    """A one-time sign-in link for the dashboard (docs/web.md, ADR 0160)."""

    url: str = Field(description="The dashboard's address with the code in its fragment; open it once.")
    fragment: str = Field(description="#signin=<code>: append it to the dashboard's address.")
    role: str = Field(description="admin or read: the role of the session it opens, the caller's.")
    expires_in: float = Field(description="Seconds left to open it.")


class RedeemIn(BaseModel):
    """The code of a sign-in link, traded once for a session token."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, max_length=100, description="What follows #signin= in the link.")


class SessionTokenOut(BaseModel):
    """A dashboard session opened by a sign-in link: send it as the bearer token."""

    token: str = Field(description="Authorization: Bearer <token>, until it expires.")
    role: str = Field(description="admin or read.")
    expires_in: float = Field(description="Seconds it stays valid.")


class HealthOut(BaseModel):
    status: str
    checked: str | None = None
