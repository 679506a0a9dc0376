"""``pqueue worker --autoscale MIN:MAX``: bad input is one line naming the rule and exit 2,
before anything starts; the children never see ``PQUEUE_AUTOSCALE``."""

from __future__ import annotations

import pytest

from pqueue.cli import build_parser, main
from pqueue.cli._options import resolve
from pqueue.cli.worker import child_env

APP = "tests.worker.apps.crash_app:router"
DSN = "redis://127.0.0.1:1/0"  # never reached: every case fails before connecting


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PQUEUE_AUTOSCALE", "PQUEUE_PROCESSES", "PQUEUE_DSN"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("4:2", "MIN must be <= MAX"),
        ("0:2", "MIN and MAX must be >= 1"),
        ("1:0", "MIN and MAX must be >= 1"),
        ("-2:3", "MIN and MAX must be >= 1"),
        ("one:two", "must be whole numbers"),
        ("3", "write MIN:MAX"),
    ],
)
def test_a_bad_range_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], value: str, rule: str
) -> None:
    assert main(["worker", APP, "--dsn", DSN, f"--autoscale={value}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pqueue: error: --autoscale") and rule in err


def test_the_environment_variable_is_checked_the_same_way(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PQUEUE_AUTOSCALE", "5:1")
    assert main(["worker", APP, "--dsn", DSN]) == 2
    assert "MIN must be <= MAX" in capsys.readouterr().err


@pytest.mark.parametrize("processes", [["--processes", "2"], ["--processes", "1"]])
def test_autoscale_with_processes_is_refused(
    capsys: pytest.CaptureFixture[str], processes: list[str]
) -> None:
    assert main(["worker", APP, "--dsn", DSN, "--autoscale", "1:3", *processes]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--autoscale and --processes cannot go together" in err


def test_processes_from_the_environment_counts_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PQUEUE_PROCESSES", "3")
    assert main(["worker", APP, "--dsn", DSN, "--autoscale", "1:3"]) == 2
    assert "cannot go together" in capsys.readouterr().err


def test_memory_broker_cannot_autoscale(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", APP, "--dsn", "memory://", "--autoscale", "1:2"]) == 2
    assert "memory:// lives in one process" in capsys.readouterr().err


def test_thresholds_are_flags_with_working_defaults() -> None:
    args = resolve(
        build_parser().parse_args(["worker", APP, "--autoscale", "1:4", "--autoscale-up-after", "0.5"])
    )
    assert (args.autoscale_backlog, args.autoscale_age, args.autoscale_up_after) == (1.0, 10.0, 0.5)
    assert (args.autoscale_down_after, args.autoscale_cooldown, args.autoscale_interval) == (30.0, 10.0, 1.0)


def test_a_bad_threshold_is_refused_by_the_parser() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["worker", APP, "--autoscale-backlog", "0"])
    assert exc.value.code == 2


def test_children_do_not_inherit_the_autoscale_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQUEUE_AUTOSCALE", "1:4")
    args = resolve(build_parser().parse_args(["worker", APP, "--dsn", DSN]))
    assert "PQUEUE_AUTOSCALE" not in child_env(args)


@pytest.mark.parametrize("flag", ["--autoscale-interval", "--autoscale-cooldown", "--autoscale-backlog"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e10"])
def test_an_endless_threshold_is_refused_by_the_parser(flag: str, value: str) -> None:
    # inf used to pass, and the autoscaler thread then died on its first wait (OverflowError),
    # leaving the pool at MIN for good
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["worker", APP, "--autoscale", "1:2", flag, value])
    assert exc.value.code == 2
