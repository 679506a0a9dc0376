"""``pqueue worker`` argument handling: flags, their PQUEUE_* variables, router loading, errors."""

from __future__ import annotations

import argparse
import sys

import pytest

from pqueue import ConfigError, Router
from pqueue.cli import build_parser, main
from pqueue.cli._app import load_router
from pqueue.cli._options import resolve
from pqueue.cli.worker import child_command, child_env

APP = "tests.worker.apps.crash_app:router"


def parse(*argv: str) -> argparse.Namespace:
    return resolve(build_parser().parse_args(["worker", *argv]))


def test_flags_have_documented_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PQUEUE_CONCURRENCY", "PQUEUE_QUEUES", "PQUEUE_LEASE", "PQUEUE_DSN", "PQUEUE_PROCESSES"):
        monkeypatch.delenv(name, raising=False)
    args = parse(APP)
    assert (args.router, args.dsn, args.concurrency, args.queues) == (
        APP,
        None,
        10,
        "critical:6,default:3,low:1",
    )
    assert (args.lease, args.shutdown_timeout, args.processes, args.unknown_type) == (30.0, 30.0, 1, "retry")


def test_environment_mirrors_the_flags_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQUEUE_DSN", "redis://cache:6379/1")
    monkeypatch.setenv("PQUEUE_CONCURRENCY", "25")
    monkeypatch.setenv("PQUEUE_QUEUES", "a:2,b:1")
    monkeypatch.setenv("PQUEUE_SHUTDOWN_TIMEOUT", "90")
    monkeypatch.setenv("PQUEUE_UNKNOWN_TYPE", "dead")
    args = parse(APP, "--concurrency", "3")
    assert (args.dsn, args.concurrency, args.queues) == ("redis://cache:6379/1", 3, "a:2,b:1")
    assert (args.shutdown_timeout, args.unknown_type) == (90.0, "dead")


def test_a_bad_environment_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQUEUE_CONCURRENCY", "lots")
    with pytest.raises(ConfigError, match="PQUEUE_CONCURRENCY"):
        parse(APP)


def test_children_of_processes_n_get_the_same_settings() -> None:
    args = parse(APP, "--dsn", "memory://x", "--concurrency", "7", "--processes", "3", "--strict")
    args.strict = True
    command = child_command(args)
    assert command[:5] == [sys.executable, "-m", "pqueue", "worker", APP]
    assert (
        command[command.index("--concurrency") + 1] == "7"
        and command[command.index("--processes") + 1] == "1"
        and command[command.index("--prefetch") + 1] == "auto"
    )
    assert "--strict" in command and "--parent-pid" in command
    zero = child_command(parse(APP, "--prefetch", "0"))
    assert zero[zero.index("--prefetch") + 1] == "0"


def test_children_of_processes_n_get_the_dsn_from_their_environment_not_argv(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dsn = "postgresql://app:s3cret-pw@db.internal/app"
    monkeypatch.delenv("PQUEUE_DSN", raising=False)
    args = parse(APP, "--dsn", dsn, "--processes", "4")
    command, env = child_command(args), child_env(args)
    assert "--dsn" not in command and not any("s3cret-pw" in part for part in command)  # ps shows argv
    assert env["PQUEUE_DSN"] == dsn
    monkeypatch.setenv("PQUEUE_DSN", env["PQUEUE_DSN"])  # what the child sees
    assert parse(*command[4:]).dsn == dsn


def test_prefetch_is_auto_or_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse(APP).prefetch is None and parse(APP, "--prefetch", "auto").prefetch is None
    assert parse(APP, "--prefetch", "0").prefetch == 0
    monkeypatch.setenv("PQUEUE_PREFETCH", "50")
    assert parse(APP).prefetch == 50
    monkeypatch.setenv("PQUEUE_PREFETCH", "-1")
    with pytest.raises(ConfigError, match="PQUEUE_PREFETCH"):
        parse(APP)


def test_prefetch_help_offers_only_what_the_flag_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    start = text.index("--prefetch PREFETCH ")
    prefetch = text[start : text.index("--unknown-type", start)]
    assert "default: auto]" in prefetch and "None" not in prefetch
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", APP, "--prefetch", "None"])  # not a value: refused


def test_load_router_finds_module_attributes() -> None:
    router = load_router(APP)
    assert isinstance(router, Router) and "crash:record" in router


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module_xyz:router", "cannot import"),
        ("tests.worker.apps.crash_app:nothing", "has no attribute"),
        ("tests.worker.apps.crash_app:record", "not a pqueue.Router"),
        (":router", "MODULE:ROUTER"),
    ],
)
def test_load_router_errors_say_what_is_wrong(target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_router(target)


def test_missing_dsn_or_router_exits_1_with_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PQUEUE_DSN", raising=False)
    monkeypatch.delenv("PQUEUE_ROUTER", raising=False)
    assert main(["worker", APP]) == 1
    assert "PQUEUE_DSN" in capsys.readouterr().err
    assert main(["worker", "--dsn", "memory://"]) == 1
    assert "MODULE:ROUTER" in capsys.readouterr().err


def test_an_unknown_dsn_scheme_is_refused_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", APP, "--dsn", "rabbit://localhost", "--processes", "3"]) == 1
    assert "use one of" in capsys.readouterr().err
