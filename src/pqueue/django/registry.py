"""Which job types a worker may run: a Django task found by its import path, never any code.

A job's type is its task's ``module_path`` (``myapp.tasks.send_receipt``), so the admin
CLI, dashboard and metrics name Django tasks as people know them. A worker imports that
module on demand, so no one writes a Router, but a stored job must not be able to make a
worker import arbitrary modules. The rule (ADR 0146): the module must be an
``INSTALLED_APPS`` package or under one, or under a prefix listed in ``TASK_MODULES``;
and the attribute must be a Django ``Task``. Anything else is an unknown type.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from django.apps import apps

from pqueue.django import _compat


class TaskNotAllowed(LookupError):
    """The job type names no task a worker may run; the message says why."""


def allowed_prefixes(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The installed apps' packages and ``extra``: where tasks may be imported from."""
    return (*(config.name for config in apps.get_app_configs()), *extra)


def is_allowed(module: str, prefixes: Iterable[str]) -> bool:
    """Whether ``module`` is one of ``prefixes`` or inside one of them."""
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def find_task(path: str, prefixes: Iterable[str]) -> Any:
    """The Django ``Task`` at ``path`` (``module.attribute``).

    Raises :class:`TaskNotAllowed` when the module is outside ``prefixes``, cannot be
    imported (the import error in the message), or the attribute is missing or not a Task.
    """
    module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise TaskNotAllowed(f"{path!r} is not a task's import path (module.function)")
    prefixes = tuple(prefixes)
    if not is_allowed(module_name, prefixes):
        raise TaskNotAllowed(
            f"module {module_name!r} is in no INSTALLED_APPS package nor TASK_MODULES prefix; "
            "a worker imports tasks only from those"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise TaskNotAllowed(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    task = getattr(module, attr, None)
    if not isinstance(task, _compat.Task):
        raise TaskNotAllowed(f"{path!r} is {type(task).__name__}, not a Django Task (@task)")
    return task
