"""The backend's ``OPTIONS`` in ``settings.TASKS``, read once and checked by name.

``DSN`` (else ``PQUEUE_DSN``) is where jobs go. ``DATABASE`` is the Django database
alias whose transactions an enqueue joins or waits for (docs/django.md). ``TASK_MODULES``
adds import prefixes, beyond the ``INSTALLED_APPS`` packages, under which a worker may
import a job's task (ADR 0146). ``RETRIES`` is the default of a task's ``retries``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

KNOWN = ("DSN", "DATABASE", "TASK_MODULES", "RETRIES")


@dataclass(frozen=True, slots=True)
class BackendOptions:
    """The checked ``OPTIONS`` of one ``pqueue.django.PqueueBackend`` alias."""

    dsn: str
    database: str = "default"
    task_modules: tuple[str, ...] = ()
    retries: int = 0

    @classmethod
    def parse(cls, alias: str, options: Mapping[str, Any]) -> BackendOptions:
        """Check ``options``; an unknown key or a bad value raises ``ImproperlyConfigured``
        naming ``TASKS[alias]["OPTIONS"][key]``."""
        where = f'TASKS[{alias!r}]["OPTIONS"]'
        unknown = sorted(set(options) - set(KNOWN))
        if unknown:
            raise ImproperlyConfigured(f"{where}: unknown key(s) {unknown}; known: {list(KNOWN)}")
        dsn = options.get("DSN") or os.environ.get("PQUEUE_DSN")
        if not isinstance(dsn, str) or "://" not in dsn:
            raise ImproperlyConfigured(f'{where}["DSN"]: a broker DSN such as redis://... is required')
        database = options.get("DATABASE", "default")
        if not isinstance(database, str):
            raise ImproperlyConfigured(f'{where}["DATABASE"]: a database alias, got {database!r}')
        modules = options.get("TASK_MODULES", ())
        if isinstance(modules, str) or not all(isinstance(m, str) and m for m in modules):
            raise ImproperlyConfigured(f'{where}["TASK_MODULES"]: a list of module names, got {modules!r}')
        retries = options.get("RETRIES", 0)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ImproperlyConfigured(f'{where}["RETRIES"]: an int >= 0, got {retries!r}')
        return cls(dsn=dsn, database=database, task_modules=tuple(modules), retries=retries)
