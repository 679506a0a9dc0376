"""The CLI as a process: help, version and exit codes, and what a fresh interpreter imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pqueue import __version__
from pqueue.cli import main


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: pqueue" in capsys.readouterr().out


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_python_dash_m_runs_the_same_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pqueue", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and __version__ in done.stdout


def test_import_pqueue_loads_neither_croniter_nor_opentelemetry() -> None:
    code = (
        "import sys, pqueue, pqueue.worker; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('croniter', 'opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
