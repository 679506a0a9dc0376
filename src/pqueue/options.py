"""A job's options, defined once: :class:`JobOptions`, the keywords of every enqueue.

``AsyncClient.enqueue``, ``Client.enqueue`` and ``handler.enqueue``/``handler.task``
take ``**options: Unpack[JobOptions]``, so type checkers check every caller and editors
list every option, and :class:`~pqueue.task.Task` has one field per option (with the
defaults below). :func:`pqueue.spec.build_spec` is the one validation. The HTTP
``JobIn`` model, the ``pqueue enqueue`` flags and the Spark writer map each option or say
why they do not offer it; ``tests/unit/test_option_parity.py`` fails when a surface
misses one, so adding an option here is where it starts (docs/architecture.md).

An option a task declaration (``@router.task(...)``) also carries is marked here with
where that declaration reaches a job that leaves it unset (:class:`Declared`): the
precedence is the job's own value, then its handler's declaration, then the default
(docs/producing.md, ADR 0157).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, get_type_hints

from pqueue.job import JSONValue

if TYPE_CHECKING:
    from pqueue.task import Task


class Declared(Enum):
    """Where a task's declaration of an option reaches a job that leaves the option unset.

    Marks the options below (``Annotated[..., Declared.X]``); the handler has an attribute
    of the option's name holding its declaration.
    """

    BY_PRODUCER = "producer"
    """Only where the job is enqueued with the router (``Client(dsn, router=...)``,
    ``handler.enqueue``, ``pqueue enqueue --app``, ``pqueue serve --app``): the option
    decides where or in what order the job waits, before any worker sees it."""
    BY_WORKER = "worker"
    """Also by the worker that runs the job, whoever enqueued it: the job records that its
    producer left the option unset (``Job.unset``), and the worker takes its handler's."""


class SharedOptions(TypedDict, total=False):
    """The options one call of ``enqueue_map`` gives every job of its batch alike."""

    queue: Annotated[str | None, Declared.BY_PRODUCER]
    """The queue to put the job on; default ``"default"``, or the handler's queue when the
    client was given the router."""
    delay: float | timedelta | None
    """Seconds (or a timedelta) before the job may run; default: now."""
    run_at: datetime | None
    """An aware datetime before which the job does not run (not with ``delay``)."""
    max_retries: Annotated[int | None, Declared.BY_WORKER]
    """How many times a failed run is retried before the job is dead; default: the
    handler's (wherever the job was enqueued), else 3."""
    timeout: Annotated[float | timedelta | None, Declared.BY_WORKER]
    """Seconds one run may take before it is cancelled and counted as a failure; default:
    the handler's (wherever the job was enqueued), else none."""
    unique_for: float | timedelta | None
    """Seconds the job's unique key is held after enqueue; while it is, an enqueue with the
    same key stores nothing."""
    unique_until: str
    """``"ttl"`` (the default): the unique key is held for all of ``unique_for``, whatever
    becomes of the job; ``"done"``: it is freed as soon as the job completes (still after
    ``unique_for`` at the latest, and kept by a job that dies or is cancelled)."""
    meta: Mapping[str, str] | None
    """String tags carried with the job (e.g. a trace id), at most 32."""
    max_recoveries: int
    """How many times the job may be taken back from a worker that died holding it before
    it is dead; default 5."""
    priority: Annotated[int, Declared.BY_PRODUCER]
    """The job's place within its queue: an int from -100 to 100, default 0; a claim takes
    the highest priority first, then the earliest due, then the first enqueued
    (docs/priority.md). Queue weights still decide between queues."""


class JobOptions(SharedOptions, total=False):
    """Every option of one job: the keywords of ``enqueue`` and the fields of ``Task``.

    All optional; each key's docstring says what it means and its default.
    """

    unique_key: str | None
    """The unique key (needs ``unique_for``); default: derived from type, queue and payload."""
    idempotency_key: str | None
    """Jobs with this key run to success at most once: a later one is acked without running
    (docs/delivery-semantics.md)."""
    job_id: str | None
    """The job's id (a lower-case UUID), chosen by the caller so a re-sent job is refused
    instead of stored twice; default: a new UUIDv7."""
    depends_on: Sequence[str] | None
    """Ids of jobs that must complete first; the job waits (status ``waiting``) until they
    have, and reads their results from ``job.parent_results`` (docs/workflows.md)."""
    on_parent_failure: str
    """When a parent dies or is cancelled: ``"cancel"`` this job (and its own dependants),
    the default, or ``"run"`` it anyway."""
    limit_key: str | None
    """The job's limit group, in place of the router rule's ``limit_key`` (docs/limits.md)."""
    rate: str | None
    """A rate limit for the job's group, such as ``"100/s"``, when the client has no router
    that defines one (docs/limits.md)."""
    concurrency: int | None
    """A concurrency limit (an int >= 1) for the job's group, when the client has no router
    that defines one (docs/limits.md)."""


OPTION_NAMES: tuple[str, ...] = tuple(JobOptions.__annotations__)
"""Every option's name, in definition order (shared ones first)."""
SHARED_OPTION_NAMES: tuple[str, ...] = tuple(SharedOptions.__annotations__)
"""The options ``enqueue_map`` takes (one value for its whole batch)."""


def _declared(*where: Declared) -> tuple[str, ...]:
    hints = get_type_hints(JobOptions, include_extras=True)
    return tuple(
        name
        for name in OPTION_NAMES
        if any(mark in where for mark in getattr(hints[name], "__metadata__", ()))
    )


DECLARED_OPTIONS: tuple[str, ...] = _declared(Declared.BY_PRODUCER, Declared.BY_WORKER)
"""The options a task declaration carries (under the same name on its
:class:`~pqueue.router.Handler`): a producer with the router fills them in when unset."""
RUN_TIME_OPTIONS: tuple[str, ...] = _declared(Declared.BY_WORKER)
"""The options the worker running a job takes from its handler when the job's producer
left them unset (recorded in ``JobSpec.unset``/``Job.unset``)."""


def task_of(type: str, payload: JSONValue, options: JobOptions) -> Task:
    """The :class:`Task` ``enqueue(type, payload, **options)`` asks for (unchecked until
    :meth:`Task.to_spec`); ``meta`` and ``depends_on`` may be None or any sequence here."""
    from pqueue.task import Task

    fields: dict[str, Any] = dict(options)
    if "meta" in fields and fields["meta"] is None:
        fields["meta"] = {}
    if "depends_on" in fields:
        fields["depends_on"] = tuple(fields["depends_on"] or ())
    return Task(type, payload, **fields)
