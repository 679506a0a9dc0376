"""The rules of pqueue.django that need no broker: options, the import allowlist, error paths."""

from __future__ import annotations

import traceback

import pytest
from django.core.exceptions import ImproperlyConfigured
from shop import tasks

from pqueue.django.backend import PqueueBackend
from pqueue.django.options import BackendOptions
from pqueue.django.registry import TaskNotAllowed, allowed_prefixes, find_task, is_allowed
from pqueue.django.results import exception_class_path
from pqueue.job import ErrorInfo


def _stored(exc: BaseException) -> ErrorInfo:
    try:
        raise exc
    except BaseException as raised:  # noqa: BLE001 - stored as the worker stores it
        return ErrorInfo.from_exception(raised, traceback_text="".join(traceback.format_exception(raised)))


class Nested:
    class Boom(Exception):
        pass


def test_exception_class_path_comes_from_the_traceback() -> None:
    assert exception_class_path(_stored(tasks.PaymentDeclined("two\nlines"))) == "shop.tasks.PaymentDeclined"
    assert exception_class_path(_stored(ValueError("x"))) == "builtins.ValueError"
    assert exception_class_path(_stored(Nested.Boom())) == "test_units.Nested.Boom"
    assert exception_class_path(ErrorInfo("UnknownJobType", "no handler")) == "pqueue.UnknownJobType"
    assert exception_class_path(ErrorInfo("Vanished", "a class no longer importable")) == "Vanished"


def test_options_are_checked_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PQUEUE_DSN", raising=False)
    with pytest.raises(ImproperlyConfigured, match=r"unknown key\(s\) \['DNS'\]"):
        BackendOptions.parse("default", {"DNS": "redis://x"})
    with pytest.raises(ImproperlyConfigured, match=r'\["DSN"\]: a broker DSN'):
        BackendOptions.parse("default", {})
    with pytest.raises(ImproperlyConfigured, match=r'\["RETRIES"\]: an int >= 0'):
        BackendOptions.parse("default", {"DSN": "memory://", "RETRIES": -1})
    with pytest.raises(ImproperlyConfigured, match="TASK_MODULES"):
        BackendOptions.parse("default", {"DSN": "memory://", "TASK_MODULES": "shop"})
    monkeypatch.setenv("PQUEUE_DSN", "memory://from-env")
    assert BackendOptions.parse("default", {}).dsn == "memory://from-env"


def test_only_installed_apps_and_declared_prefixes_are_imported() -> None:
    prefixes = allowed_prefixes(["extra.jobs"])
    assert "shop" in prefixes and "extra.jobs" in prefixes
    assert is_allowed("shop.tasks", prefixes) and is_allowed("extra.jobs.mail", prefixes)
    assert not is_allowed("shopping.tasks", prefixes)  # a prefix ends at a dot
    assert find_task("shop.tasks.visit", prefixes) is tasks.visit
    with pytest.raises(TaskNotAllowed, match="not a Django Task"):
        find_task("shop.tasks.PaymentDeclined", prefixes)
    with pytest.raises(TaskNotAllowed, match="in no INSTALLED_APPS package"):
        find_task("subprocess.run", prefixes)
    with pytest.raises(TaskNotAllowed, match=r"cannot import 'shop\.missing': ModuleNotFoundError"):
        find_task("shop.missing.run", prefixes)


def test_check_names_a_bad_dsn() -> None:
    backend = PqueueBackend("other", {"OPTIONS": {"DSN": "nosuch://host"}})
    [error] = backend.check()
    assert error.id == "pqueue.E001" and "nosuch" in error.msg
    assert PqueueBackend("other", {"OPTIONS": {"DSN": "memory://ok"}}).check() == []


def test_pqueue_worker_takes_every_flag_of_pqueue_worker() -> None:
    import argparse

    from pqueue.cli.worker import add_parser
    from pqueue.django.management.commands.pqueue_worker import Command

    subparsers = argparse.ArgumentParser().add_subparsers()
    add_parser(subparsers)
    [ours] = subparsers.choices.values()
    flags = {s for action in ours._actions for s in action.option_strings} - {"-h", "--help"}
    theirs = Command().create_parser("manage.py", "pqueue_worker")
    django_flags = {s for action in theirs._actions for s in action.option_strings}
    assert flags and flags <= django_flags
    assert "--backend" in django_flags
