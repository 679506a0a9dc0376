"""Workflows: ``chain``, ``group`` and ``chord`` of :class:`~pqueue.task.Task` s, built on
``depends_on`` (docs/workflows.md, ADR 0115).

A workflow is data: building one stores nothing. ``.enqueue(client)`` (a sync
:class:`~pqueue.Client`) or ``await .enqueue_async(async_client)`` gives every task an
id, sets each one's ``depends_on`` from the shape, and stores the whole graph in one
broker call (``enqueue_many``), all or nothing; it returns the job ids in the order the
tasks appear in the definition. Also here: how ``client.result()`` turns a finished job
into a value or an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, TypeAlias

from pqueue.errors import InvalidOption, InvalidRequest, JobCancelled, JobFailed
from pqueue.ids import new_id
from pqueue.job import ErrorInfo, Job, JobStatus, JSONValue
from pqueue.spec import validate_parent_failure
from pqueue.task import Task

if TYPE_CHECKING:
    from pqueue.client import AsyncClient
    from pqueue.sync import Client


class Workflow:
    """A graph of tasks to enqueue together; made by :func:`chain`, :func:`group`, :func:`chord`."""

    def _place(self, parents: list[str], into: list[Task]) -> list[str]:
        """Append this workflow's tasks (with ids and ``depends_on``) to ``into``, its first
        steps depending on ``parents``; return the ids of its last steps."""
        raise NotImplementedError

    def tasks(self, *, depends_on: Sequence[str] = (), on_parent_failure: str | None = None) -> list[Task]:
        """The tasks as they will be enqueued: each with a job id and its ``depends_on``.

        Args:
            depends_on: ids of stored jobs the workflow's first steps wait for.
            on_parent_failure: ``"cancel"`` or ``"run"`` for every task (default: each
                task's own, ``"cancel"`` unless set).
        """
        if on_parent_failure is not None:
            validate_parent_failure(on_parent_failure)
        if isinstance(depends_on, str):
            raise InvalidOption("depends_on must be a list of job ids, not one string")
        placed: list[Task] = []
        self._place(list(depends_on), placed)
        if on_parent_failure is not None:
            placed = [replace(task, on_parent_failure=on_parent_failure) for task in placed]
        return placed

    def enqueue(
        self, client: Client, *, depends_on: Sequence[str] = (), on_parent_failure: str | None = None
    ) -> list[str]:
        """Store the whole graph in one call with a sync :class:`~pqueue.Client`; returns
        the job ids in definition order. Raises what ``enqueue_many`` raises (nothing is
        stored then), and ``JobNotFound`` for a ``depends_on`` id that names no job."""
        tasks = self.tasks(depends_on=depends_on, on_parent_failure=on_parent_failure)
        return [r.id for r in client.enqueue_many(tasks)]

    async def enqueue_async(
        self, client: AsyncClient, *, depends_on: Sequence[str] = (), on_parent_failure: str | None = None
    ) -> list[str]:
        """:meth:`enqueue` with an :class:`~pqueue.AsyncClient`."""
        tasks = self.tasks(depends_on=depends_on, on_parent_failure=on_parent_failure)
        return [r.id for r in await client.enqueue_many(tasks)]


Step: TypeAlias = "Task | Workflow"


def _place(step: Step, parents: list[str], into: list[Task]) -> list[str]:
    if isinstance(step, Workflow):
        return step._place(parents, into)
    if not isinstance(step, Task):
        raise InvalidOption(f"a workflow step must be a Task or a workflow, got {type(step).__name__}")
    job_id = step.job_id or new_id()
    depends = tuple(dict.fromkeys((*step.depends_on, *parents)))
    into.append(replace(step, job_id=job_id, depends_on=depends))
    return [job_id]


def _steps(kind: str, steps: Iterable[Step]) -> tuple[Step, ...]:
    found = tuple(steps)
    if not found:
        raise InvalidOption(f"{kind} needs at least one task")
    for step in found:
        if not isinstance(step, Task | Workflow):
            raise InvalidOption(f"a {kind} step must be a Task or a workflow, got {type(step).__name__}")
    return found


@dataclass(frozen=True, init=False)
class Chain(Workflow):
    """Steps one after another: each starts when the one before has completed."""

    steps: tuple[Step, ...]

    def __init__(self, *steps: Step) -> None:
        object.__setattr__(self, "steps", _steps("chain", steps))

    def _place(self, parents: list[str], into: list[Task]) -> list[str]:
        for step in self.steps:
            parents = _place(step, parents, into)
        return parents


@dataclass(frozen=True, init=False)
class Group(Workflow):
    """Steps side by side: all may run at once; what follows waits for every one."""

    members: tuple[Step, ...]

    def __init__(self, members: Iterable[Step]) -> None:
        object.__setattr__(self, "members", _steps("group", members))

    def _place(self, parents: list[str], into: list[Task]) -> list[str]:
        return [last for member in self.members for last in _place(member, parents, into)]


@dataclass(frozen=True, init=False)
class Chord(Workflow):
    """A group, then a callback that runs once every member completed and reads all their
    results (``job.parent_results``, keyed by member id, in member order)."""

    header: Workflow
    callback: Step

    def __init__(self, header: Group | Iterable[Step], callback: Step) -> None:
        object.__setattr__(self, "header", header if isinstance(header, Workflow) else Group(header))
        object.__setattr__(self, "callback", _steps("chord callback", [callback])[0])

    def _place(self, parents: list[str], into: list[Task]) -> list[str]:
        return _place(self.callback, self.header._place(parents, into), into)


def chain(*steps: Step) -> Chain:
    """``chain(a, b, c)``: ``b`` runs after ``a`` completed, ``c`` after ``b``; each reads the
    one before's result with ``job.parent_result()``."""
    return Chain(*steps)


def group(steps: Iterable[Step]) -> Group:
    """``group([a, b, c])``: run side by side; in a chain, the next step waits for all."""
    return Group(steps)


def chord(header: Group | Iterable[Step], callback: Step) -> Chord:
    """``chord(group([...]), callback)``: ``callback`` runs once every member completed."""
    return Chord(header, callback)


# -- result() ---------------------------------------------------------------------------


def wait_seconds(timeout: float | timedelta | None) -> float:
    """``result()``'s timeout as seconds (``inf`` for None); refuses a negative or NaN one."""
    if timeout is None:
        return math.inf
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or math.isnan(seconds)
        or seconds < 0
    ):
        raise InvalidRequest(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
    return float(seconds)


def outcome_of(job: Job) -> JSONValue:
    """A finished job's result, or the typed error its end means."""
    if job.status is JobStatus.COMPLETED:
        return job.result
    if job.status is JobStatus.DEAD:
        raise JobFailed(job.id, job.last_error or ErrorInfo("Unknown", "no error recorded"))
    if job.status is JobStatus.CANCELLED:
        raise JobCancelled(job.id, job.last_error)
    raise InvalidRequest(f"job {job.id} is {job.status.value}, not finished")  # a broker bug
