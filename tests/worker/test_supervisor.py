"""``Supervisor`` (``pqueue worker --processes N``): signals that land while it starts children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import pytest

from pqueue import supervisor

NO_HANDLER = [sys.executable, "-c", "import time; time.sleep(30); raise SystemExit(4)"]
"""A child that has not installed signal handlers (yet): SIGTERM ends it at once."""


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "POLL", 0.01)


def test_a_signal_during_a_childs_start_reaches_it_and_stops_the_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen_then_sigterm(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        os.kill(os.getpid(), signal.SIGTERM)  # lands before the supervisor has registered the child
        return proc

    monkeypatch.setattr(supervisor.subprocess, "Popen", popen_then_sigterm)
    pool = supervisor.Supervisor(NO_HANDLER, processes=3)
    code = pool.run()
    assert len(started) == 1, "children were started after the signal"
    assert [p.returncode for p in started] == [-signal.SIGTERM], "the child being started missed the signal"
    assert code == 0 and pool.signals == 1


def test_a_child_ended_by_the_forwarded_signal_before_its_handlers_counts_as_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[subprocess.Popen[bytes]] = []
    pool = supervisor.Supervisor(NO_HANDLER, processes=3)
    real_spawn = pool._spawn

    def spawn_then_sigterm(slot: int, *, failures: int) -> None:
        real_spawn(slot, failures=failures)
        started.extend(child.proc for child in pool._children.values() if child.proc not in started)
        os.kill(os.getpid(), signal.SIGTERM)  # the pool is still starting; the child is registered

    monkeypatch.setattr(pool, "_spawn", spawn_then_sigterm)
    code = pool.run()
    assert [p.returncode for p in started] == [-signal.SIGTERM]
    assert code == 0, "a child stopped by the drain signal itself made the pool fail"


def test_a_child_forced_out_still_fails_the_pool() -> None:
    pool = supervisor.Supervisor([sys.executable, "-c", "raise SystemExit(143)"], processes=1)
    pool._forwarded.add(signal.SIGTERM)
    assert pool._stop_code(0, 143) == 143 and pool._stop_code(0, -signal.SIGTERM) == 0
    assert pool._stop_code(0, -signal.SIGKILL) == 128 + signal.SIGKILL


def test_children_get_the_environment_given(monkeypatch: pytest.MonkeyPatch) -> None:
    envs: list[Any] = []
    real_popen = subprocess.Popen

    def popen_then_sigterm(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        envs.append(kwargs.get("env"))
        proc = real_popen(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return proc

    monkeypatch.setattr(supervisor.subprocess, "Popen", popen_then_sigterm)
    assert supervisor.Supervisor(NO_HANDLER, processes=2, env={"PQUEUE_DSN": "redis://:pw@h/0"}).run() == 0
    assert envs == [{"PQUEUE_DSN": "redis://:pw@h/0"}]


def test_supervisor_gives_up_on_children_that_cannot_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "MAX_BACKOFF", 0.01)
    pool = supervisor.Supervisor([sys.executable, "-c", "raise SystemExit(4)"], processes=2)
    assert pool.run() == 1 and pool.gave_up


def test_resize_retires_the_newest_child_once_and_never_restarts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retired child gets one SIGTERM; the pool-wide stop does not signal it again (that
    would force it out of its drain), and its exit is not a crash to restart."""
    sent: list[tuple[int, int]] = []
    real_send = subprocess.Popen.send_signal

    def recording_send(self: subprocess.Popen[bytes], signum: int) -> None:
        sent.append((self.pid, signum))
        real_send(self, signum)

    monkeypatch.setattr(subprocess.Popen, "send_signal", recording_send)
    # A child that ignores the first SIGTERM for a moment, as a draining worker does.
    draining = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, lambda *a: exit(0)); time.sleep(30)",
    ]
    pool = supervisor.Supervisor(draining, processes=2)
    real_apply = pool._apply_target
    steps = iter([lambda: pool.resize(1), lambda: os.kill(os.getpid(), signal.SIGTERM)])
    retired: set[int] = set()

    def apply_then_step() -> None:
        real_apply()
        retired.update(pool._retiring)
        if len(pool._children) == 2 or pool._retiring:
            next(steps, lambda: None)()

    monkeypatch.setattr(pool, "_apply_target", apply_then_step)
    assert pool.run() == 0
    pids = sorted({pid for pid, _ in sent})
    assert len(pids) == 2
    assert [signum for pid, signum in sent if pid == max(pids)] == [signal.SIGTERM], (
        "the retired child was signalled again"
    )
    assert pool.size == 0 and pool.target == 1 and not pool._retiring


def test_a_child_that_found_the_broker_unusable_stops_the_pool_with_its_code() -> None:
    """Exit code 3 (a damaged file, a dropped schema: ADR 0158) is not a crash to restart
    into: the other children are stopped and the pool exits 3 too."""
    unusable = [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1])); raise SystemExit(3)"]
    pool = supervisor.Supervisor([*unusable, "0.2"], processes=2)
    code = pool.run()
    assert code == 3 and pool.unusable and not pool.gave_up
