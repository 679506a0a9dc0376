"""The Django app of ``pqueue.django``: it brings the ``pqueue_worker`` management command."""

from __future__ import annotations

from django.apps import AppConfig


class PqueueConfig(AppConfig):
    name = "pqueue.django"
    label = "pqueue"
    verbose_name = "pqueue"
