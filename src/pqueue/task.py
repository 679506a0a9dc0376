"""``Task``: one job to enqueue, as data, for :meth:`AsyncClient.enqueue_many`.

A task has one field per option of :class:`~pqueue.options.JobOptions`, the keywords
of :meth:`AsyncClient.enqueue` (tests/unit/test_option_parity.py checks it).
:meth:`Task.to_spec` validates them (through :func:`pqueue.spec.build_spec`) into a
:class:`JobSpec`.
``queue``, ``max_retries``, ``timeout`` and ``priority`` left as None take the registered
handler's defaults when the client knows the router (else ``default``, 3, no timeout, 0).
Without the router, the spec records ``max_retries`` and ``timeout`` left as None in
``JobSpec.unset``, and the worker running the job takes its handler's (ADR 0157).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any

from pqueue.job import JobSpec, JSONValue, unset_of
from pqueue.limits import explicit_limit
from pqueue.options import RUN_TIME_OPTIONS
from pqueue.spec import (
    DEFAULT_MAX_RECOVERIES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    build_spec,
)


@dataclass(frozen=True, slots=True)
class Task:
    """A job to enqueue: its type, payload and options (see :class:`~pqueue.options.JobOptions`)."""

    type: str
    payload: JSONValue = None
    queue: str | None = None
    delay: float | timedelta | None = None
    run_at: datetime | None = None
    max_retries: int | None = None
    timeout: float | timedelta | None = None
    unique_for: float | timedelta | None = None
    unique_until: str = "ttl"
    """``"done"`` frees the unique key when the job completes, before ``unique_for`` ends."""
    unique_key: str | None = None
    idempotency_key: str | None = None
    meta: Mapping[str, str] = field(default_factory=dict)
    max_recoveries: int = DEFAULT_MAX_RECOVERIES
    priority: int | None = None
    """-100..100, higher runs sooner within the queue; None takes the handler's (else 0)."""
    job_id: str | None = None
    """Choose the id (a UUID) so a re-sent task is refused instead of duplicated."""
    depends_on: tuple[str, ...] = ()
    """Ids of jobs that must complete before this one runs (it waits as ``waiting``)."""
    on_parent_failure: str = "cancel"
    """When a parent dies or is cancelled: ``"cancel"`` this job too, or ``"run"`` it anyway."""
    limit_key: str | None = None
    """The job's limit group: replaces the router rule's ``limit_key`` (docs/limits.md)."""
    rate: str | None = None
    """A rate limit such as ``"100/s"`` for a producer without the router (docs/limits.md)."""
    concurrency: int | None = None
    """A concurrency limit for a producer without the router (docs/limits.md)."""

    def with_defaults(
        self, queue: str, max_retries: int, timeout: float | None, priority: int = DEFAULT_PRIORITY
    ) -> Task:
        """This task with the unset options taken from a handler's defaults."""
        return replace(
            self,
            queue=queue if self.queue is None else self.queue,
            max_retries=max_retries if self.max_retries is None else self.max_retries,
            timeout=timeout if self.timeout is None else self.timeout,
            priority=priority if self.priority is None else self.priority,
        )

    def unset(self) -> frozenset[str]:
        """The run-time options (:data:`~pqueue.options.RUN_TIME_OPTIONS`) this task leaves
        as None: its job's worker takes them from the handler."""
        values = _run_time_values(self)
        try:
            return _unset_by_values(values)
        except TypeError:  # an unhashable value: build_spec refuses it right after
            return _unset_by_values.__wrapped__(values)

    def to_spec(self, **overrides: Any) -> JobSpec:
        """Validate into a :class:`JobSpec`; raises :class:`~pqueue.errors.InvalidJob`."""
        if "limit" not in overrides and (
            self.limit_key is not None or self.rate is not None or self.concurrency is not None
        ):
            overrides["limit"] = explicit_limit(self.limit_key, self.rate, self.concurrency)
        return build_spec(
            self.type,
            self.payload,
            queue=DEFAULT_QUEUE if self.queue is None else self.queue,
            delay=self.delay,
            run_at=self.run_at,
            max_retries=DEFAULT_MAX_RETRIES if self.max_retries is None else self.max_retries,
            max_recoveries=self.max_recoveries,
            priority=DEFAULT_PRIORITY if self.priority is None else self.priority,
            timeout=self.timeout,
            unique_for=self.unique_for,
            unique_key=self.unique_key,
            unique_until=self.unique_until,
            idempotency_key=self.idempotency_key,
            meta=self.meta,
            job_id=self.job_id,
            depends_on=self.depends_on or None,
            on_parent_failure=self.on_parent_failure,
            unset=self.unset(),
            **overrides,
        )


_run_time_values: Callable[[Task], tuple[Any, ...]] = (
    attrgetter(*RUN_TIME_OPTIONS)
    if len(RUN_TIME_OPTIONS) > 1
    else lambda task: (getattr(task, RUN_TIME_OPTIONS[0]),)
)
"""A task's values of the run-time options, as a tuple (attrgetter: one C call)."""


@functools.lru_cache(maxsize=256)
def _unset_by_values(values: tuple[Any, ...]) -> frozenset[str]:
    """The unset options of a task whose run-time options have ``values``: most tasks
    share a few, and a cache hit costs less than testing each value."""
    return unset_of(name for name, value in zip(RUN_TIME_OPTIONS, values, strict=True) if value is None)
