"""``python manage.py pqueue_worker``: run the project's Django tasks until SIGTERM, then drain.

The flags are ``pqueue worker``'s own (:func:`pqueue.cli.worker.add_options`), with
defaults from the backend: ``--dsn`` from ``OPTIONS["DSN"]`` and ``--queues`` from
``QUEUES`` (equal weights), unless given or set in their ``PQUEUE_*`` variables.
``--backend`` picks the ``TASKS`` alias. No Router is written: tasks are found by their
import path, under the rule of :mod:`pqueue.django.registry`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pqueue.cli._options import given, resolve
from pqueue.cli.worker import add_options, run
from pqueue.errors import ConfigError

ROUTER = "pqueue.django.worker:router"


class Command(BaseCommand):
    help = "Run the Django tasks of a pqueue.django.PqueueBackend until SIGTERM, then drain."

    def add_arguments(self, parser: CommandParser) -> None:
        add_options(parser)
        parser.add_argument("--backend", default="default", help="the TASKS alias whose jobs to run")

    def handle(self, *args: Any, **options: Any) -> None:
        from pqueue.django import _compat
        from pqueue.django.backend import PqueueBackend
        from pqueue.django.worker import BACKEND_ENV

        alias = options["backend"]
        try:
            backend = _compat.task_backends[alias]
        except Exception as exc:
            raise CommandError(f"--backend {alias!r}: {exc}") from exc
        if not isinstance(backend, PqueueBackend):
            raise CommandError(
                f"TASKS[{alias!r}] is {type(backend).__name__}, not pqueue.django.PqueueBackend"
            )
        namespace = argparse.Namespace(**options)
        if not given(namespace, "dsn"):
            namespace.dsn = backend.settings.dsn
        if not given(namespace, "queues"):
            namespace.queues = ",".join(f"{q}:1" for q in sorted(backend.queues or {"default"}))
        namespace.router = ROUTER
        os.environ[BACKEND_ENV] = alias  # for this process's router and for --processes children
        if sys.path and sys.path[0]:  # manage.py's directory, for children started elsewhere
            os.environ["PYTHONPATH"] = os.pathsep.join(
                filter(None, [sys.path[0], os.environ.get("PYTHONPATH")])
            )
        try:
            code = run(resolve(namespace))
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        if code:
            sys.exit(code)
