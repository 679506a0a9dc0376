"""Fixtures of the example project's tests: a broker per test on memory, Redis and Postgres,
and a worker, in this process or as ``manage.py pqueue_worker``."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

import pqueue
from pqueue.django.clients import close_all

REDIS_URL = os.environ.get("PQUEUE_TEST_REDIS_URL", "redis://127.0.0.1:6379/3")
BROKERS = ["memory", "redis", "postgres"]


def _postgres_dsn(schema: str) -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgresql://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}?schema={schema}"


@pytest.fixture(params=BROKERS)
def dsn(request: pytest.FixtureRequest, settings: Any, django_db_blocker: Any) -> Iterator[str]:
    """A fresh broker namespace for this test, set as the default backend's DSN."""
    name = f"pqdj{uuid.uuid4().hex[:10]}"
    kind = request.param
    if kind == "memory":
        url = f"memory://{name}"
    elif kind == "redis":
        url = f"{REDIS_URL}?prefix={name}"
    else:
        with django_db_blocker.unblock():
            url = _postgres_dsn(name)
        from pqueue.brokers.postgres import migrate

        migrate(url)
    tasks = {**settings.TASKS}
    tasks["default"] = {**tasks["default"], "OPTIONS": {"DSN": url}}
    settings.TASKS = tasks
    yield url
    close_all()
    if kind == "redis":
        _drop_redis(name)
    elif kind == "postgres":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _drop_redis(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.unlink(*keys)
    finally:
        client.close()


@contextmanager
def worker_in_thread(dsn: str, **options: Any) -> Iterator[pqueue.Worker]:
    """A pqueue worker on Django's tasks, in a thread of this process (memory:// needs it)."""
    from pqueue.django.worker import TaskRouter

    settings: dict[str, Any] = {"queues": ["default", "emails"], "shutdown_timeout": 10.0, "lease": 10.0}
    settings.update(options)
    worker = pqueue.Worker(dsn, TaskRouter("default"), **settings)
    thread = threading.Thread(target=lambda: asyncio.run(worker.serve()), name="django-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(30)


@pytest.fixture
def worker(dsn: str) -> Iterator[pqueue.Worker]:
    with worker_in_thread(dsn) as running:
        yield running
