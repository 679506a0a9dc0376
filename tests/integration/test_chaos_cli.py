"""``pqueue chaos`` as a user runs it: a clean run exits 0 with its last line in the
documented shape; a broker that breaks a promise is caught, with the seed and the history
that shows it; bad flags are refused in one line."""

from __future__ import annotations

import re

import pytest

from pqueue.brokers.memory.broker import MemoryBroker
from pqueue.cli import main
from tests.ports import free_port

LAST_LINE = re.compile(
    r"^chaos dsn=(?P<dsn>\S+) seed=(?P<seed>\d+) jobs=(?P<jobs>\d+) faults=(?P<faults>\d+) "
    r"lost=(?P<lost>\d+) doubled=(?P<doubled>\d+) violations=(?P<violations>\d+) elapsed=[\d.]+s$"
)


def last_line(out: str) -> re.Match[str]:
    match = LAST_LINE.match(out.strip().splitlines()[-1])
    assert match, out[-500:]
    return match


def test_a_clean_run_exits_0_with_the_documented_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chaos", "--dsn", "memory://", "--duration", "5", "--seed", "7", "--rate", "15"]) == 0
    out, err = capsys.readouterr()
    line = last_line(out)
    assert line["dsn"] == "memory" and line["seed"] == "7"
    assert int(line["jobs"]) > 50 and int(line["faults"]) >= 1
    assert (line["lost"], line["doubled"], line["violations"]) == ("0", "0", "0")
    assert "seed=7" in err.splitlines()[0]  # printed first, so a crashed run still shows it


def test_a_broker_that_breaks_a_promise_is_caught_with_its_seed_and_history(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def says_yes_does_nothing(self: MemoryBroker, job_id: str) -> bool:
        return True

    monkeypatch.setattr(MemoryBroker, "cancel", says_yes_does_nothing)
    assert main(["chaos", "--dsn", "memory://", "--duration", "5", "--seed", "3", "--rate", "30"]) == 1
    out, _ = capsys.readouterr()
    assert int(last_line(out)["violations"]) > 0
    assert "VIOLATION outcome: job" in out and "was cancelled (cancel said yes) but ended" in out
    assert "cancel job=" in out  # the history excerpt under the violation
    assert "reproduce with --seed 3" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--faults", "kil"], "unknown fault 'kil' (did you mean 'kill'?)"),
        (["--faults", "kill"], "kill does not apply here: memory:// lives in one process"),
        (["--faults", "restart"], "restarts need a server the run started itself"),
        (["--workers", "0"], "--workers must be between 1 and 64"),
        (["--duration", "1"], "--duration must be between 5s and 7d"),
    ],
)
def test_bad_flags_are_refused_in_one_line(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chaos", "--dsn", "memory://", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("pqueue: error: ") and message in err[-1], err


def test_an_unreachable_broker_is_one_error_line_after_the_seed(capfd: pytest.CaptureFixture[str]) -> None:
    dsn = f"redis://pq:hunter2-secret@127.0.0.1:{free_port()}/0"
    assert main(["chaos", "--dsn", dsn, "--duration", "5", "--seed", "4"]) == 1
    out, err = capfd.readouterr()
    lines = err.strip().splitlines()
    assert lines[0].startswith("chaos: seed=4 dsn=redis://pq:***@127.0.0.1:")
    assert lines[-1].startswith("pqueue: error: ") and "unreachable" in lines[-1]
    assert not [line for line in lines if "lost Redis" in line or "Traceback" in line]
    assert "hunter2-secret" not in out + err
