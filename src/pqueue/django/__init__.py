"""Django's Tasks framework on pqueue: ``pqueue.django.PqueueBackend`` (docs/django.md).

Add ``"pqueue.django"`` to ``INSTALLED_APPS`` for ``manage.py pqueue_worker`` and point
``TASKS`` at the backend. Works with Django 6's ``django.tasks`` and with the
``django-tasks`` backport (Django 4.2-5.2); :mod:`pqueue.django._compat` picks one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PqueueBackend", "PqueueTask", "task"]


def __getattr__(name: str) -> Any:
    # Lazy: Django imports INSTALLED_APPS packages before settings are usable, and the
    # backend module needs Django's Tasks API, which reads settings.
    if name == "task":  # Django's own @task, from whichever Tasks API is installed
        from pqueue.django import _compat

        return _compat.task
    if name in __all__:
        from pqueue.django import backend

        return getattr(backend, name)
    raise AttributeError(f"module 'pqueue.django' has no attribute {name!r}")
