"""``pqueue.django.PqueueBackend``: Django's Tasks backend API on pqueue (docs/django.md).

``TASKS = {"default": {"BACKEND": "pqueue.django.PqueueBackend", "QUEUES": [...],
"OPTIONS": {"DSN": "redis://..."}}}``. A task is a job whose type is the task's import
path and whose payload is ``{"args": [...], "kwargs": {...}}``; the job id is the
result id. ``@task(retries=..., timeout=..., unique=...)`` set pqueue's options for the
task's jobs (Django 6.1 hands extra ``@task`` keywords to :attr:`task_class`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core import checks
from django.utils import timezone

from pqueue.django import _compat
from pqueue.django.clients import client_for
from pqueue.django.options import BackendOptions
from pqueue.django.registry import TaskNotAllowed, allowed_prefixes, find_task
from pqueue.django.results import PAYLOAD_KEYS, payload_of, task_result
from pqueue.django.transactions import Placement
from pqueue.errors import ConfigError, InvalidJob, JobNotFound
from pqueue.ids import new_id
from pqueue.spec import build_spec
from pqueue.task import Task as JobTask


@dataclass(frozen=True, slots=True, kw_only=True)
class PqueueTask(_compat.Task):
    """A Django ``Task`` with pqueue's own options, given as extra ``@task`` keywords."""

    retries: int | None = None
    """Failed runs retried before the job is FAILED (dead); default ``OPTIONS["RETRIES"]``, 0."""
    timeout: float | timedelta | None = None
    """Seconds one run may take before it is stopped and counted as a failure."""
    unique: float | timedelta | None = None
    """Seconds during which an enqueue with the same arguments stores nothing and returns
    the result of the job already enqueued (pqueue's ``unique_for``)."""


class PqueueBackend(_compat.BaseTaskBackend):
    """Enqueue Django tasks as pqueue jobs; run them with ``manage.py pqueue_worker``."""

    task_class = PqueueTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.settings = BackendOptions.parse(alias, self.options)
        self._placement: Placement | None = None

    # -- checks ----------------------------------------------------------------------

    def validate_task(self, task: Any) -> None:
        """Django's checks, then pqueue's on the task's own options (``InvalidTask``)."""
        super().validate_task(task)
        try:
            build_spec(
                task.module_path,
                queue=task.queue_name,
                max_retries=self._retries(task),
                timeout=getattr(task, "timeout", None),
                unique_for=getattr(task, "unique", None),
            )
        except InvalidJob as exc:
            raise _compat.InvalidTask(f"{task.module_path}: {exc}") from None

    def check(self, **kwargs: Any) -> list[Any]:
        """The DSN names a backend whose driver is installed."""
        from pqueue.brokers import connect

        try:
            connect(self.settings.dsn)
        except ConfigError as exc:
            return [checks.Error(f"TASKS[{self.alias!r}]: {exc}", id="pqueue.E001")]
        return []

    # -- enqueue ---------------------------------------------------------------------

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """Store one job (joined to, deferred to, or outside the open transaction)."""
        job = self._job(task, args, kwargs)
        spec = job.to_spec()  # every option checked: nothing is stored on bad input
        client = client_for(self.settings.dsn)
        job_id = self._placement_now().send(spec, lambda: client.enqueue_task(job).id)
        return self._enqueued(task, job_id, job.payload)

    async def aenqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """Store one job without blocking the loop (async code has no atomic block to join)."""
        job = self._job(task, args, kwargs)
        job.to_spec()
        result = await client_for(self.settings.dsn).enqueue_task_async(job)
        return self._enqueued(task, result.id, job.payload)

    def _job(self, task: Any, args: Any, kwargs: Any) -> JobTask:
        self.validate_task(task)
        payload = payload_of(args, kwargs)  # Django's TypeError/ValueError for non-JSON arguments
        return JobTask(
            task.module_path,
            payload,
            queue=task.queue_name,
            run_at=_aware(task.run_after),
            max_retries=self._retries(task),
            timeout=getattr(task, "timeout", None),
            unique_for=getattr(task, "unique", None),
            job_id=new_id(),
            priority=task.priority,  # Django's -100..100, higher sooner: pqueue's own scale
        )

    def _retries(self, task: Any) -> int:
        retries = getattr(task, "retries", None)
        return self.settings.retries if retries is None else retries

    def _placement_now(self) -> Placement:
        if self._placement is None:
            self._placement = Placement(self.settings.dsn, self.settings.database)
        return self._placement

    def _enqueued(self, task: Any, job_id: str, payload: dict[str, Any]) -> Any:
        result = _compat.TaskResult(
            task=task,
            id=job_id,
            status=_compat.TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=payload["args"],
            kwargs=payload["kwargs"],
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        _compat.task_enqueued.send(type(self), task_result=result)
        return result

    # -- results ---------------------------------------------------------------------

    def get_result(self, result_id: str) -> Any:
        """The task's result as stored now; ``TaskResultDoesNotExist`` for an unknown id, a
        pruned job, or a job that is not a Django task's."""
        try:
            job = client_for(self.settings.dsn).get_job(result_id)
        except (JobNotFound, InvalidJob):
            raise _compat.TaskResultDoesNotExist(result_id) from None
        if not isinstance(job.payload, dict) or set(job.payload) != PAYLOAD_KEYS:
            raise _compat.TaskResultDoesNotExist(result_id)
        try:
            task = find_task(job.type, allowed_prefixes(self.settings.task_modules))
        except TaskNotAllowed:
            raise _compat.TaskResultDoesNotExist(result_id) from None
        return task_result(job, task, self.alias)

    async def aget_result(self, result_id: str) -> Any:
        from asgiref.sync import sync_to_async

        return await sync_to_async(self.get_result, thread_sensitive=False)(result_id)


def _aware(when: datetime | None) -> datetime | None:
    """``run_after`` as an aware datetime (naive ones are in Django's TIME_ZONE, USE_TZ=False)."""
    if when is None or timezone.is_aware(when):
        return when
    aware: datetime = timezone.make_aware(when, timezone.get_default_timezone())
    return aware
