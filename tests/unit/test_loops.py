"""Which event loop pqueue runs its own loops on (pqueue.loops)."""

from __future__ import annotations

import asyncio

import pytest

from pqueue import loops
from pqueue.errors import ConfigError


async def _loop_name() -> str:
    return loops.running_loop_name()


def test_auto_takes_uvloop_when_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")  # a dev install has it (pqueue-jobs[dev] pulls pqueue-jobs[uvloop])
    monkeypatch.delenv(loops.LOOP_ENV, raising=False)
    assert loops.run(_loop_name()) == "uvloop"
    assert loops.run(_loop_name(), loop="asyncio") == "asyncio"


def test_the_environment_chooses_when_no_choice_is_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loops.LOOP_ENV, "asyncio")
    assert loops.run(_loop_name()) == "asyncio"
    monkeypatch.setenv(loops.LOOP_ENV, " UVLOOP ")
    assert loops.loop_choice() == "uvloop"


def test_without_uvloop_auto_falls_back_and_uvloop_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops, "_import_uvloop", lambda: None)
    assert loops.run(_loop_name(), loop="auto") == "asyncio"
    with pytest.raises(ConfigError, match=r'pip install "pqueue-jobs\[uvloop\]"'):
        loops.run(_loop_name(), loop="uvloop")


@pytest.mark.parametrize("bad", ["trio", "", "uv loop"])
def test_an_unknown_choice_is_a_config_error_and_runs_nothing(
    bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[bool] = []

    async def main() -> None:
        ran.append(True)

    with pytest.raises(ConfigError, match="expected one of auto, asyncio, uvloop"):
        loops.run(main(), loop=bad)
    monkeypatch.setenv(loops.LOOP_ENV, "trio")
    with pytest.raises(ConfigError, match="PQUEUE_LOOP="):
        loops.new_event_loop()
    assert ran == []


def test_a_new_loop_is_not_running_and_closes_cleanly() -> None:
    loop = loops.new_event_loop("auto")
    try:
        assert not loop.is_running()
        assert loop.run_until_complete(asyncio.sleep(0, result=7)) == 7
    finally:
        loop.close()
