"""``.ci/apt-install``, which ``make test`` uses for Prometheus and Chromium: apt's output goes
to a log named on failure, and the service a package enables is left stopped and disabled.

Run against stand-ins for apt-get and the service tools on ``PATH``, which record their
arguments: nothing is installed and no service is touched.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "apt-install"
TOOLS = ("systemctl", "deb-systemd-helper", "update-rc.d", "service")


def fake_tools(tmp_path: Path, apt_status: int) -> dict[str, str]:
    """A ``PATH`` whose apt-get prints 150 lines of noise and exits ``apt_status``, and whose
    service tools only write their arguments to ``calls``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "apt-get").write_text(
        f'#!/bin/sh\necho "apt-get $*" >> {calls}\n'
        f'for i in $(seq 150); do echo "Unpacking noise $i"; done\nexit {apt_status}\n'
    )
    for tool in TOOLS:
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\n')
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "TMPDIR": str(tmp_path)}


def run(tmp_path: Path, *argv: str, apt_status: int = 0) -> subprocess.CompletedProcess[str]:
    env = fake_tools(tmp_path, apt_status)
    return subprocess.run(
        ["bash", str(SCRIPT), *argv], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_apt_output_goes_to_a_log_and_the_enabled_service_is_stopped(tmp_path: Path) -> None:
    done = run(tmp_path, "--no-service", "prometheus", "prometheus")
    assert done.returncode == 0, done.stderr
    assert "noise" not in done.stdout + done.stderr and len(done.stdout.splitlines()) == 2
    [log] = tmp_path.glob("pqueue-apt-*.log")
    assert str(log) in done.stdout and "Unpacking noise 150" in log.read_text()
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "apt-get install -y -qq --no-install-recommends prometheus" in calls
    if Path("/run/systemd/system").is_dir():
        assert "systemctl disable --now --quiet prometheus.service" in calls
    else:
        assert {"deb-systemd-helper disable prometheus.service", "service prometheus stop"} <= set(calls)


def test_a_failed_install_names_its_log_and_shows_its_end(tmp_path: Path) -> None:
    done = run(tmp_path, "--no-service", "prometheus", "prometheus", apt_status=100)
    assert done.returncode == 1
    [log] = tmp_path.glob("pqueue-apt-*.log")
    assert f"failed; its output is in {log}" in done.stderr
    assert "Unpacking noise 150" in done.stderr and "Unpacking noise 100" not in done.stderr
    assert not any(line.startswith(TOOLS) for line in (tmp_path / "calls").read_text().splitlines())
