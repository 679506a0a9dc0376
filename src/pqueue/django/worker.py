"""The worker side: a :class:`~pqueue.Router` that finds Django tasks by their job type.

``manage.py pqueue_worker`` runs ``pqueue worker pqueue.django.worker:router``; its
child processes (``--processes N``) import this module, which sets Django up first. A
job type is looked up in :mod:`pqueue.django.registry` the first time it is seen and
kept; one that is not allowed or not importable is an unknown type (``--unknown-type``
retries or dead-letters it), with the reason in the job's error, never a crash.

Each run is framed by ``close_old_connections()``, as Django frames a request: a
connection that broke or outlived ``CONN_MAX_AGE`` is closed before and after.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from typing import Any

import django
from django.apps import apps

if not apps.ready:  # a child process of --processes N, started by pqueue's supervisor
    django.setup()

from django.db import close_old_connections

from pqueue.django import _compat
from pqueue.django.options import BackendOptions
from pqueue.django.registry import TaskNotAllowed, allowed_prefixes, find_task
from pqueue.django.results import task_result
from pqueue.job import Job
from pqueue.retry import DEFAULT_RETRY_POLICY
from pqueue.router import Handler, Router

log = logging.getLogger("pqueue.django")

BACKEND_ENV = "PQUEUE_DJANGO_BACKEND"
"""The ``TASKS`` alias whose jobs this process runs (set by ``pqueue_worker --backend``)."""


class TaskRouter(Router):
    """Handlers made on demand for the Django tasks allowed by the registry's rule."""

    def __init__(self, alias: str) -> None:
        super().__init__()
        self.alias = alias
        settings = _compat.task_backends[alias].settings
        if not isinstance(settings, BackendOptions):
            raise TypeError(f"TASKS[{alias!r}] is not a pqueue.django.PqueueBackend")
        self.prefixes = allowed_prefixes(settings.task_modules)
        self._misses: dict[str, str] = {}

    def get(self, name: str) -> Handler | None:
        handler = super().get(name)
        if handler is not None:
            return handler
        try:
            task = find_task(name, self.prefixes)
        except TaskNotAllowed as exc:
            self._misses[name] = str(exc)
            log.warning("job type %r: %s", name, exc)
            return None
        handler = Handler(
            self,
            name,
            _runner(task, self.alias),
            queue=task.queue_name,
            max_retries=0,
            timeout=None,
            retry=DEFAULT_RETRY_POLICY,
        )
        self._add(handler)
        return handler

    def missing_reason(self, name: str) -> str | None:
        return self._misses.pop(name, None)


def _arguments(task: Any, job: Job, alias: str) -> tuple[list[Any], dict[str, Any]]:
    payload = job.payload if isinstance(job.payload, dict) else {}
    args = list(payload.get("args", []))
    if task.takes_context:
        args.insert(0, _compat.TaskContext(task_result=task_result(job, task, alias)))
    return args, dict(payload.get("kwargs", {}))


def _runner(task: Any, alias: str) -> Callable[[Job], Any]:
    """The handler function of ``task``: async for an ``async def`` task, else sync."""
    func = task.func
    if inspect.iscoroutinefunction(func):
        from asgiref.sync import sync_to_async

        close_async = sync_to_async(close_old_connections, thread_sensitive=True)

        async def run_async(job: Job) -> Any:
            await close_async()
            try:
                args, kwargs = _arguments(task, job, alias)
                return _compat.normalize_json(await func(*args, **kwargs))
            finally:
                await close_async()

        return run_async

    def run(job: Job) -> Any:
        close_old_connections()
        try:
            args, kwargs = _arguments(task, job, alias)
            return _compat.normalize_json(func(*args, **kwargs))
        finally:
            close_old_connections()

    return run


_routers: dict[str, TaskRouter] = {}


def __getattr__(name: str) -> TaskRouter:
    """``router``: the router ``pqueue_worker`` runs (``pqueue.django.worker:router``), made
    on first use for the ``TASKS`` alias in ``PQUEUE_DJANGO_BACKEND`` (default ``default``)."""
    if name != "router":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    alias = os.environ.get(BACKEND_ENV) or "default"
    if alias not in _routers:
        _routers[alias] = TaskRouter(alias)
    return _routers[alias]
