"""A file the SQLite backend cannot use is refused in one line, and nothing is written: a
missing directory, a read-only file or directory, a file that is not SQLite, a database at
another schema version ("run pqueue migrate"). The CLI prints the line; the API raises it
typed. A file that does not exist yet (in a directory that does) is made, at the current version."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

import pqueue
from pqueue.brokers.sqlite import current_version, migrate
from pqueue.brokers.sqlite.sql import latest_version
from pqueue.errors import ConfigError, PQueueError, SchemaError


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "pqueue", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env=env,
    )


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for path in tmp_path.rglob("*"):  # give back the write bits a test took away
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


async def _refused(dsn: str, kind: type[PQueueError], text: str) -> None:
    broker = pqueue.connect(dsn)
    with pytest.raises(kind, match=text) as info:
        await broker.open()
    assert "\n" not in str(info.value)


def _one_line(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and text in result.stderr, result.stderr


async def test_a_path_in_a_missing_directory(folder: Path) -> None:
    dsn = f"sqlite:///{folder}/nowhere/jobs.db"
    await _refused(dsn, ConfigError, "does not exist")
    _one_line(_cli("migrate", "--dsn", dsn, cwd=folder), "does not exist")
    assert not (folder / "nowhere").exists()


async def test_a_read_only_file_and_a_read_only_directory(folder: Path) -> None:
    dsn = f"sqlite:///{folder}/jobs.db"
    migrate(dsn)
    (folder / "jobs.db").chmod(0o444)
    before = _snapshot(folder)
    await _refused(dsn, ConfigError, "read-only")
    _one_line(_cli("migrate", "--dsn", dsn, cwd=folder), "read-only")
    _one_line(_cli("stats", "--dsn", dsn, cwd=folder), "read-only")
    assert _snapshot(folder) == before
    locked = folder / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    _one_line(_cli("migrate", "--dsn", f"sqlite:///{locked}/jobs.db", cwd=folder), "read-only")
    assert list(locked.iterdir()) == []


async def test_a_file_that_is_not_sqlite(folder: Path) -> None:
    junk = folder / "notes.db"
    junk.write_text("these are my notes, not a database\n")
    dsn = f"sqlite:///{junk}"
    await _refused(dsn, SchemaError, "not a SQLite database")
    _one_line(_cli("migrate", "--dsn", dsn, cwd=folder), "not a SQLite database")
    assert _snapshot(folder) == {"notes.db": b"these are my notes, not a database\n"}


async def test_a_new_file_is_created_at_the_current_version(folder: Path) -> None:
    dsn = f"sqlite:///{folder}/jobs.db"
    async with pqueue.connect(dsn) as broker:
        assert "at version" in await broker.check_health()
    assert current_version(dsn) == latest_version()


async def test_another_schema_version_says_run_pqueue_migrate(folder: Path) -> None:
    dsn = f"sqlite:///{folder}/jobs.db"
    migrate(dsn)
    with closing(sqlite3.connect(folder / "jobs.db")) as conn:
        conn.execute("DELETE FROM migrations")
        conn.commit()
    await _refused(dsn, SchemaError, "run: pqueue migrate")
    _one_line(_cli("stats", "--dsn", dsn, cwd=folder), "run: pqueue migrate")
    with closing(sqlite3.connect(folder / "jobs.db")) as conn:
        conn.execute("INSERT INTO migrations VALUES (999, 'future', 0)")
        conn.commit()
    before = _snapshot(folder)
    await _refused(dsn, SchemaError, "newer than this pqueue")
    _one_line(_cli("migrate", "--dsn", dsn, cwd=folder), "newer than this pqueue")
    assert _snapshot(folder) == before


@pytest.mark.parametrize("path", [":memory:", "file:jobs.db?mode=memory"])
async def test_an_in_memory_database_is_refused_not_made_a_file(folder: Path, path: str) -> None:
    # sqlite:///:memory: used to make a file named ':memory:' in the working directory
    with pytest.raises(ConfigError, match="memory://") as info:
        pqueue.connect(f"sqlite:///{path}")
    assert "\n" not in str(info.value)
    result = _cli("migrate", "--dsn", "sqlite:///:memory:", cwd=folder)
    _one_line(result, "memory://")
    assert _snapshot(folder) == {}


def test_a_busy_timeout_sqlite_cannot_hold_is_one_line_and_makes_no_file(folder: Path) -> None:
    # 1e306 s used to end in an OverflowError traceback after creating an empty file; a value
    # over 2**31 - 1 ms read back as 0 in SQLite (no wait at all)
    for value in ("1e306", "2147484"):
        result = _cli("migrate", "--dsn", f"sqlite:///jobs.db?busy_timeout={value}", cwd=folder)
        _one_line(result, "busy_timeout must be at most")
    assert _snapshot(folder) == {}
