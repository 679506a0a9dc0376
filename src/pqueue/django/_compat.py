"""The one module that imports Django's Tasks API: ``django.tasks`` (Django 6) or else the
``django_tasks`` backport (Django 4.2-5.2, the ``django-tasks`` package).

Both define the same classes under the same names but two: the backport calls its
exceptions ``InvalidTaskError``/``InvalidTaskBackendError`` and keeps ``normalize_json`` in
its ``utils``. Everything else in :mod:`pqueue.django` imports from here, so the rest of
the integration is written once. The names are typed ``Any``: Django ships no type hints
for mypy, and the two packages are not the same classes to a type checker anyway.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from django.core.exceptions import ImproperlyConfigured


def _load() -> tuple[str, ModuleType]:
    for name in ("django.tasks", "django_tasks"):
        try:
            return name, importlib.import_module(name)
        except ImportError:
            continue
    raise ImproperlyConfigured(
        "pqueue.django needs Django's Tasks API: Django >= 6.0, or the django-tasks backport "
        '(pip install "pqueue-jobs[django]")'
    )


API_NAME, _api = _load()
"""``"django.tasks"`` or ``"django_tasks"``: which of the two this process uses."""
_base = importlib.import_module(f"{API_NAME}.base")
_exceptions = importlib.import_module(f"{API_NAME}.exceptions")
_backends = importlib.import_module(f"{API_NAME}.backends.base")
_signals = importlib.import_module(f"{API_NAME}.signals")

Task: Any = _base.Task
TaskResult: Any = _base.TaskResult
TaskContext: Any = _base.TaskContext
TaskError: Any = _base.TaskError
TaskResultStatus: Any = _base.TaskResultStatus
BaseTaskBackend: Any = _backends.BaseTaskBackend
task_backends: Any = _api.task_backends
task: Any = _api.task

InvalidTask: Any = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError
TaskResultDoesNotExist: Any = _exceptions.TaskResultDoesNotExist

task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished


def _normalize_json() -> Any:
    try:
        from django.utils.json import normalize_json  # Django 6

        return normalize_json
    except ImportError:
        return importlib.import_module("django_tasks.utils").normalize_json


normalize_json: Any = _normalize_json()
"""Django's check that arguments and return values are JSON: raises ``TypeError``/``ValueError``."""
