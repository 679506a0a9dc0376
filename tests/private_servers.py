"""Private Redis and Postgres servers we own, for faults that must not touch the shared
ones: SCRIPT FLUSH, killed connections, restarts and crashes (each is a
:class:`pqueue.testing.faults.restarts.Server`).

Each runs on a free loopback port (tests/ports.py) with its data in a directory of its own, and can be
stopped gracefully (:meth:`stop`), crashed (:meth:`kill`) and started again on the same
port and data. Plain classes, no pytest: the fixtures (tests/integration/*/servers.py)
and bench/restarts.py share them.

- Redis: ``redis-server`` with AOF (``appendfsync always``), so a restart -- even after
  SIGKILL -- keeps every acknowledged write.
- Postgres: a throwaway cluster made by ``initdb`` from the newest
  ``/usr/lib/postgresql/*/bin`` (or ``PQUEUE_TEST_PG_BIN``), run by ``pg_ctl`` as the
  ``postgres`` OS user when we are root (Postgres refuses to run as root), its socket in
  its own directory. A crash is ``pg_ctl stop -m immediate`` (no shutdown checkpoint:
  the restart replays the WAL, as after a power cut of the server process).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.ports import free_port

__all__ = ["PrivatePostgres", "PrivateRedis", "free_port", "postgres_bin"]

START_TIMEOUT = 30.0


def _wait_for_port(port: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"{what} did not start on port {port}")


class PrivateRedis:
    """One redis-server process we own: start, stop, kill and restart it on the same port and data."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def missing() -> str | None:
        """Why this machine cannot run one, or None."""
        return None if shutil.which("redis-server") else "redis-server is not installed"

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port, 10, f"redis-server (see {self.dir / 'redis.log'})")

    def stop(self) -> None:
        """Shut down cleanly (the AOF is already fsynced on every write)."""
        self._end(signal.SIGTERM)  # redis shuts down, flushing the AOF

    def kill(self) -> None:
        """Crash: SIGKILL, no shutdown at all."""
        self._end(signal.SIGKILL)

    def _end(self, sig: signal.Signals) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


def postgres_bin() -> Path | None:
    """The newest Postgres server binaries on this machine (or ``PQUEUE_TEST_PG_BIN``)."""
    configured = os.environ.get("PQUEUE_TEST_PG_BIN")
    if configured:
        return Path(configured)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(found[-1]) if found else None


class PrivatePostgres:
    """A throwaway Postgres cluster we own: created in a temp directory, removed by :meth:`remove`."""

    def __init__(self) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError(self.missing() or "no Postgres binaries")
        self.bin = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="pqueue-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:  # Postgres will not run as root: the cluster belongs to `postgres`
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    @staticmethod
    def missing() -> str | None:
        """Why this machine cannot run one, or None."""
        bindir = postgres_bin()
        if bindir is None or not (bindir / "pg_ctl").exists():
            return "no Postgres server binaries in /usr/lib/postgresql/*/bin (set PQUEUE_TEST_PG_BIN)"
        if os.geteuid() == 0 and shutil.which("runuser") is None:
            return "running as root without runuser: cannot start Postgres as the postgres user"
        return None

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({result.returncode}): {result.stderr.strip() or result.stdout}"
            )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=100"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "postgres.log"), "-o", options, "-w",
                  "-t", str(int(START_TIMEOUT)), "start")  # fmt: skip
        _wait_for_port(self.port, START_TIMEOUT, f"postgres (see {self.dir / 'postgres.log'})")

    def migrate(self) -> None:
        """Create pqueue's schema (the CLI, as an operator would)."""
        subprocess.run(
            [sys.executable, "-m", "pqueue", "migrate", "--dsn", self.url], check=True, capture_output=True
        )

    def stop(self) -> None:
        """Shut down cleanly (``-m fast``: sessions are ended, a checkpoint is written)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """Crash: ``-m immediate`` (every server process quits at once; recovery at the next start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        """Stop the server if it runs and delete the cluster."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
