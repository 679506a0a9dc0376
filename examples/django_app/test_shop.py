"""The example project end to end: views enqueue, a worker runs the tasks, results come back.

Run with ``python -m pytest examples/django_app --ds djproject.settings`` (``make django``;
``make django6`` in a Python 3.12 venv with Django 6). Each test runs on memory, Redis and
Postgres; on Postgres the view's enqueue joins its transaction on Django's own connection.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client as HttpClient
from django.utils import timezone
from shop import tasks
from shop.models import Order, Visit

import pqueue
from conftest import worker_in_thread
from pqueue.django import _compat
from pqueue.django.clients import client_for

pytestmark = pytest.mark.django_db(transaction=True)
HERE = Path(__file__).parent


def finished(task: Any, result_id: str, *, within: float = 30.0) -> Any:
    """The task's result once it is SUCCESSFUL or FAILED (fails the test after ``within`` s)."""
    deadline = time.monotonic() + within
    while True:
        result = task.get_result(result_id)
        if result.is_finished:
            return result
        assert time.monotonic() < deadline, f"{result_id} still {result.status} after {within} s"
        time.sleep(0.02)


def stored(dsn: str) -> int:
    """Every job in the broker namespace, whatever its status."""
    return sum(client_for(dsn).stats().totals.values())


def test_view_enqueues_and_the_task_reads_the_row(dsn: str, worker: pqueue.Worker) -> None:
    response = HttpClient().post(
        "/orders", {"email": "a@example.com", "total_cents": 1250}, "application/json"
    )
    assert response.status_code == 201
    body = response.json()
    result = finished(tasks.send_receipt, body["task"])
    assert result.status == _compat.TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"order": body["order"], "email": "a@example.com", "total_cents": 1250}
    assert result.args == [body["order"]] and result.kwargs == {}
    assert result.attempts == 1 and result.errors == []
    assert result.task.queue_name == "emails" and result.backend == "default"
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert Order.objects.get(id=body["order"]).receipt_sent
    assert client_for(dsn).get_job(body["task"]).type == "shop.tasks.send_receipt"


def test_rolled_back_view_enqueues_nothing(dsn: str) -> None:
    http = HttpClient(raise_request_exception=False)
    assert http.post("/orders/broken").status_code == 500
    assert Order.objects.count() == 0
    assert stored(dsn) == 0
    http.post("/orders", json.dumps({"email": "b@example.com", "total_cents": 1}), "application/json")
    assert stored(dsn) == 1  # a committed view enqueues exactly once


def test_enqueue_joins_the_transaction_on_postgres(dsn: str) -> None:
    from django.db import transaction

    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        inside = stored(dsn)  # another connection: sees the job only once it is committed
    joined = dsn.startswith("postgresql")
    assert inside == 0
    assert stored(dsn) == 1
    assert client_for(dsn).get_job(result.id).payload == {"args": [1, 2], "kwargs": {}}
    assert tasks.add.get_backend()._placement_now().joins is joined


def test_context_async_and_get_result(dsn: str, worker: pqueue.Worker) -> None:
    added = tasks.add.enqueue(2, b=3)
    result = finished(tasks.add, added.id)
    assert result.return_value == {"sum": 5, "attempt": 1, "id": added.id}
    doubled = _run(tasks.slow_double.aenqueue(21))
    result = finished(tasks.slow_double, doubled.id)
    assert result.return_value == 42
    again = _run(tasks.slow_double.aget_result(doubled.id))
    assert again.return_value == 42 and again.status == _compat.TaskResultStatus.SUCCESSFUL


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def test_retries_then_failed_with_the_error(dsn: str, worker: pqueue.Worker) -> None:
    result = finished(tasks.charge, tasks.charge.enqueue(500).id, within=60)
    assert result.status == _compat.TaskResultStatus.FAILED
    assert result.attempts == 2  # retries=1: one run and one retry
    assert [e.exception_class_path for e in result.errors] == ["shop.tasks.PaymentDeclined"] * 2
    assert result.errors[-1].exception_class is tasks.PaymentDeclined
    assert "card declined for 500" in result.errors[-1].traceback
    with pytest.raises(ValueError, match="failed"):
        _ = result.return_value


def test_unique_enqueues_once_and_timeout_fails_the_run(dsn: str, worker: pqueue.Worker) -> None:
    first, again = tasks.once.enqueue("k"), tasks.once.enqueue("k")
    assert again.id == first.id and tasks.once.enqueue("other").id != first.id
    assert stored(dsn) == 2
    result = finished(tasks.stuck, tasks.stuck.enqueue(5).id)
    assert result.status == _compat.TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == ["pqueue.JobTimeout"]
    assert result.errors[0].exception_class is pqueue.JobTimeout


def test_run_after_waits(dsn: str, worker: pqueue.Worker) -> None:
    after = timezone.now() + timedelta(seconds=1)
    result = tasks.visit.using(run_after=after).enqueue("later")
    assert tasks.visit.get_result(result.id).status == _compat.TaskResultStatus.READY
    done = finished(tasks.visit, result.id)
    assert done.started_at >= after


def test_priority_order(dsn: str) -> None:
    for label, priority in [("low", -10), ("plain", 0), ("high", 50), ("top", 100)]:
        tasks.visit.using(priority=priority).enqueue(label)
    with worker_in_thread(dsn, concurrency=1, prefetch=0):
        deadline = time.monotonic() + 30
        while Visit.objects.count() < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert list(Visit.objects.order_by("id").values_list("label", flat=True)) == [
        "top",
        "high",
        "plain",
        "low",
    ]


def test_bad_input_stores_nothing(dsn: str) -> None:
    with pytest.raises(_compat.InvalidTask, match="priority"):
        tasks.visit.using(priority=101)
    with pytest.raises(TypeError):
        tasks.visit.enqueue(object())
    with pytest.raises(_compat.InvalidTask, match="not valid for backend"):
        tasks.visit.using(queue_name="elsewhere")
    with pytest.raises(_compat.InvalidTask, match="max_retries"):
        _compat.task(retries=-1)(tasks.visit.func)
    assert stored(dsn) == 0


def test_unimportable_task_goes_to_the_dlq(dsn: str) -> None:
    client = client_for(dsn)
    broken = client.enqueue("shop.broken.run", {"args": [], "kwargs": {}}, max_retries=0)
    foreign = client.enqueue("os.system", {"args": ["true"], "kwargs": {}}, max_retries=0)
    with worker_in_thread(dsn, unknown_type="dead"):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            jobs = [client.get_job(broken.id), client.get_job(foreign.id)]
            if all(job.status is pqueue.JobStatus.DEAD for job in jobs):
                break
            time.sleep(0.05)
    assert [job.status for job in jobs] == [pqueue.JobStatus.DEAD] * 2
    assert "cannot import 'shop.broken': RuntimeError" in str(jobs[0].last_error)
    assert "in no INSTALLED_APPS package" in str(jobs[1].last_error)
    with pytest.raises(_compat.TaskResultDoesNotExist):
        tasks.visit.get_backend().get_result(foreign.id)


def _manage_py_worker(dsn: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PQUEUE_DJANGO_DSN": dsn, "SHOP_DB_NAME": connection.settings_dict["NAME"]}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
    command = [sys.executable, "manage.py", "pqueue_worker", "--concurrency", "2", "--log-level", "WARNING"]
    return subprocess.Popen(command, cwd=HERE, env=env)


def _stop(worker: subprocess.Popen[bytes]) -> int:
    worker.send_signal(signal.SIGTERM)
    try:
        return worker.wait(30)
    finally:
        if worker.poll() is None:
            worker.kill()


def test_manage_py_worker_processes(dsn: str) -> None:
    if not dsn.startswith("redis"):
        pytest.skip("the supervised children are the same on every broker: Redis runs it")
    added = [tasks.add.enqueue(i, 1) for i in range(6)]
    env = {**os.environ, "PQUEUE_DJANGO_DSN": dsn, "SHOP_DB_NAME": connection.settings_dict["NAME"]}
    command = [sys.executable, "manage.py", "pqueue_worker", "--processes", "2", "--log-level", "WARNING"]
    worker = subprocess.Popen(command, cwd=HERE, env=env)  # children set Django up by themselves
    try:
        assert [finished(tasks.add, r.id).return_value["sum"] for r in added] == [1, 2, 3, 4, 5, 6]
    finally:
        assert _stop(worker) == 0


def test_manage_py_worker_drains_on_sigterm(dsn: str) -> None:
    if dsn.startswith("memory"):
        pytest.skip("memory:// lives in one process; a worker process cannot share it")
    slow = tasks.visit.enqueue("slow", seconds=1.5)
    quick = [tasks.visit.enqueue(f"quick{i}") for i in range(3)]
    worker = _manage_py_worker(dsn)
    deadline = time.monotonic() + 30
    while tasks.visit.get_result(slow.id).status != _compat.TaskResultStatus.RUNNING:
        if worker.poll() is not None or time.monotonic() > deadline:
            _stop(worker)
            pytest.fail(f"the worker did not start the slow task (exit {worker.poll()})")
        time.sleep(0.02)
    assert _stop(worker) == 0
    assert tasks.visit.get_result(slow.id).status == _compat.TaskResultStatus.SUCCESSFUL  # drained
    statuses = {tasks.visit.get_result(r.id).status for r in quick}
    assert statuses <= {_compat.TaskResultStatus.SUCCESSFUL, _compat.TaskResultStatus.READY}  # none held
    worker = _manage_py_worker(dsn)  # the next worker runs whatever the drain handed back
    ready = tasks.visit.enqueue("ready")  # and this one, so it is serving before its SIGTERM
    try:
        assert {finished(tasks.visit, r.id).return_value for r in quick} == {"quick0", "quick1", "quick2"}
        assert finished(tasks.visit, ready.id).return_value == "ready"
    finally:
        assert _stop(worker) == 0
