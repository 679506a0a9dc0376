"""`make demo` alone leaves a venv where the README's next commands work (issue 30, item 9):
it installs the cli extra (rich) for the admin tables, and its stamp still rebuilds only
when pyproject.toml changed. Checked with ``make -n``, which prints and runs nothing."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

from pqueue.extras import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[2]
INSTALL = re.compile(r'pip install -q -e "?\.(?:\[(?P<extras>[^\]]*)\])?"?')


def _dry_run(venv: Path, target: str = "demo") -> list[str]:
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def _installed_extras(lines: list[str]) -> list[set[str]]:
    return [
        set(filter(None, (m["extras"] or "").split(","))) for line in lines if (m := INSTALL.search(line))
    ]


def _venv(tmp_path: Path, stamp_age: float) -> Path:
    """A venv dir whose .stamp-demo is ``stamp_age`` seconds newer than pyproject.toml."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    stamp = venv / ".stamp-demo"
    stamp.touch()
    when = (ROOT / "pyproject.toml").stat().st_mtime + stamp_age
    os.utime(stamp, (when, when))
    return venv


def test_a_new_venv_gets_the_cli_extra_then_runs_the_demo(tmp_path: Path) -> None:
    lines = _dry_run(tmp_path / "venv")
    assert _installed_extras(lines) == [{"cli"}]
    assert lines[-1].endswith("/bin/pqueue demo")


def test_a_current_stamp_goes_straight_to_the_demo(tmp_path: Path) -> None:
    lines = _dry_run(_venv(tmp_path, stamp_age=60))
    assert _installed_extras(lines) == []
    assert lines[-1].endswith("/bin/pqueue demo")


def test_a_stamp_older_than_pyproject_installs_again(tmp_path: Path) -> None:
    assert _installed_extras(_dry_run(_venv(tmp_path, stamp_age=-60))) == [{"cli"}]


def test_the_dev_install_may_stamp_demo_because_it_holds_cli(tmp_path: Path) -> None:
    lines = _dry_run(tmp_path / "venv", target=f"{tmp_path / 'venv'}/.stamp-dev")
    assert any(".stamp-demo" in line for line in lines if line.startswith("touch"))
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    own = next(r for r in dev if r.startswith(f"{DISTRIBUTION}["))
    assert "cli" in own.split("[")[1].rstrip("]").split(",")
