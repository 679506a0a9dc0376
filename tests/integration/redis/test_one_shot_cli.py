"""A one-shot command against a dead Redis prints only its failure, in one line, and exits
1: no "lost Redis ... retrying until it is back" first (issue 34; ``pqueue rsmq`` printed
it). Every command runs as a real process against a closed loopback port; the commands
run side by side, each waits out the broker's reconnect attempts on its own."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from pqueue.cli import build_parser
from tests.private_servers import free_port

JOB = str(uuid.uuid4())
ONE_SHOT: dict[str, list[list[str]]] = {
    "cancel": [["cancel", JOB]],
    "dlq": [["dlq", "list"], ["dlq", "requeue", "--all"], ["dlq", "purge", "--yes"]],
    "enqueue": [["enqueue", "t"]],
    "health": [["health"]],
    "jobs": [["jobs", "list"], ["jobs", "show", JOB]],
    "pause": [["pause", "q"]],
    "resume": [["resume", "q"]],
    "schedules": [["schedules"]],
    "stats": [["stats"]],
    "workers": [["workers"]],
}
"""Every top-level one-shot command (each of its subcommands), as typed against a Redis DSN."""
ONE_SHOT_RSMQ: dict[str, list[list[str]]] = {
    "queues": [["queues"]],
    "create": [["create", "q"]],
    "attrs": [["attrs", "q"]],
    "set": [["set", "q", "--vt", "5"]],
    "send": [["send", "q", "hi"]],
    "receive": [["receive", "q", "--pop"]],
    "delete": [["delete", "q", "--queue", "--yes"]],
    "dead": [["dead", "q", "--requeue"]],
}
"""Every ``pqueue rsmq`` subcommand but the long-running worker."""
NOT_ONE_SHOT = {
    "worker": "runs until stopped (tests/integration/test_cli_errors.py: one line too)",
    "serve": "runs until stopped",
    "chaos": "runs for --duration; an unreachable broker: tests/integration/test_chaos_cli.py",
    "demo": "starts its own broker",
    "rsmq": "its subcommands are ONE_SHOT_RSMQ",
    "migrate": "Postgres and SQLite only: refuses a Redis DSN before connecting",
    "export": "needs pyarrow, refused before connecting without it",
    "report": "needs PySpark, refused before connecting without it",
}


def _subcommands(path: list[str]) -> set[str]:
    parser = build_parser()
    for name in path:
        action = next(a for a in parser._subparsers._group_actions if a.choices)  # type: ignore[union-attr]
        parser = action.choices[name]  # type: ignore[index]
    action = next(a for a in parser._subparsers._group_actions if a.choices)  # type: ignore[union-attr]
    return set(action.choices)  # type: ignore[arg-type]


def test_every_one_shot_command_is_listed() -> None:
    assert _subcommands([]) == set(ONE_SHOT) | set(NOT_ONE_SHOT)
    assert _subcommands(["rsmq"]) == set(ONE_SHOT_RSMQ) | {"worker"}
    assert {argv[1] for argvs in ONE_SHOT.values() for argv in argvs if argv[0] in ("dlq", "jobs")} == (
        _subcommands(["dlq"]) | _subcommands(["jobs"])
    )


@pytest.mark.parametrize("family", ["pqueue", "pqueue rsmq"])
def test_a_one_shot_command_against_a_dead_redis_prints_only_the_failure(family: str) -> None:
    port = free_port()
    dsn = f"redis://:s3cret@127.0.0.1:{port}/0"
    commands = (
        [argv for argvs in ONE_SHOT.values() for argv in argvs]
        if family == "pqueue"
        else [["rsmq", *argv] for argvs in ONE_SHOT_RSMQ.values() for argv in argvs]
    )
    running = [
        (argv, subprocess.Popen(
            [sys.executable, "-m", "pqueue", *argv, "--dsn", dsn],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        ))
        for argv in commands
    ]  # fmt: skip
    wrong: list[str] = []
    for argv, proc in running:
        out, err = proc.communicate(timeout=120)
        expected = [f"pqueue: error: Redis at 127.0.0.1:{port} is unreachable: connection refused"]
        if (proc.returncode, out, err.splitlines()) != (1, "", expected):
            wrong.append(f"pqueue {' '.join(argv)}: exit {proc.returncode}, stdout {out!r}, stderr {err!r}")
    assert wrong == [], "\n".join(wrong)
