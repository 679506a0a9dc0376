"""The broker side of job dependencies and result waiting (ADRs 0115-0117).

:class:`FlowBroker` is the protocol every backend implements next to
:class:`~pqueue.broker.Broker`: store a batch whose jobs depend on other jobs in one call,
and wait, woken by the broker's push channel, until a job finishes. The rules every
backend shares (which batches need it, what a graph may look like) live here once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pqueue.errors import InvalidOption
from pqueue.job import EnqueueResult, ErrorInfo, Job, JobSpec

PARENT_FAILED = "ParentFailed"
"""The ``kind`` of the error a job cancelled because of a dead or cancelled parent carries."""


def has_parents(specs: Sequence[JobSpec]) -> bool:
    """Whether a batch must go through ``enqueue_flow``: some job in it waits for parents
    (the plain enqueue paths would store it without them; ADR 0115)."""
    return any(spec.depends_on for spec in specs)


def parent_failed(parent_id: str, status: str) -> ErrorInfo:
    """The error recorded on a dependant cancelled because ``parent_id`` ended ``status``."""
    return ErrorInfo(PARENT_FAILED, f"parent job {parent_id} is {status}")


def wait_delay(timeout: float) -> float | None:
    """A ``wait_finished`` timeout for ``asyncio.timeout``: None (no limit) for ``inf``."""
    return None if math.isinf(timeout) else max(timeout, 0.0)


@runtime_checkable
class FlowBroker(Protocol):
    """Dependencies between jobs and waiting for a job to finish."""

    async def enqueue_flow(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """Store jobs some of which have ``depends_on``, all or nothing, in one call.

        A job without parents is stored as by ``enqueue``; one with parents is ``waiting``
        until each parent (in this batch or already stored) has completed. A parent that
        already completed counts as done; one already dead or cancelled applies the job's
        ``on_parent_failure`` at once. Raises :class:`~pqueue.errors.JobNotFound` for a
        parent that is neither in the batch nor stored (and stores nothing).
        """
        ...

    async def wait_finished(self, job_id: str, timeout: float) -> Job | None:
        """The job once it is completed, dead or cancelled (at once if it is already);
        None when ``timeout`` seconds pass first. Woken by the broker's push channel, not
        by polling. Raises :class:`~pqueue.errors.JobNotFound`."""
        ...


@dataclass(frozen=True, slots=True)
class FlowPlan:
    """A checked dependency batch: the parents it names outside itself."""

    external: tuple[str, ...]
    """Parent ids not in the batch, in first-named order: they must already be stored."""


def plan_flow(specs: Sequence[JobSpec]) -> FlowPlan:
    """Check a batch for ``enqueue_flow``: distinct ids and no cycle among its own jobs.

    Raises :class:`~pqueue.errors.InvalidOption` (nothing is stored)."""
    ids = {spec.id for spec in specs}
    if len(ids) != len(specs):
        raise InvalidOption("a batch with depends_on names a job id twice")
    if any(spec.unique_key is not None for spec in specs):
        raise InvalidOption("a batch with depends_on cannot hold unique jobs (unique_for)")
    external: dict[str, None] = {}
    for spec in specs:
        for parent in spec.depends_on:
            if parent not in ids:
                external[parent] = None
    _refuse_cycles(specs, ids)
    return FlowPlan(tuple(external))


def _refuse_cycles(specs: Sequence[JobSpec], ids: set[str]) -> None:
    parents = {spec.id: [p for p in spec.depends_on if p in ids] for spec in specs}
    done: set[str] = set()
    for start, first in parents.items():
        stack = [(start, iter(first))]
        on_path = {start}
        while stack:
            node, children = stack[-1]
            step = next((c for c in children if c not in done), None)
            if step is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
                continue
            if step in on_path:
                raise InvalidOption(f"depends_on makes a cycle through job {step}")
            on_path.add(step)
            stack.append((step, iter(parents[step])))


def topological(specs: Sequence[JobSpec]) -> list[JobSpec]:
    """``specs`` with every job after its in-batch parents (input order otherwise kept).
    The batch must have passed :func:`plan_flow`."""
    by_id = {spec.id: spec for spec in specs}
    placed: set[str] = set()
    out: list[JobSpec] = []

    def place(spec: JobSpec) -> None:
        stack = [spec]
        while stack:
            top = stack[-1]
            waiting = [by_id[p] for p in top.depends_on if p in by_id and p not in placed]
            if waiting:
                stack.append(waiting[0])
                continue
            stack.pop()
            if top.id not in placed:
                placed.add(top.id)
                out.append(top)

    for spec in specs:
        place(spec)
    return out
