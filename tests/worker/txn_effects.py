"""A table of handler effects beside the queue, on Postgres or SQLite, for ``job.transaction()`` tests.

The table has no unique key, so an effect written twice shows as two rows. ``slow`` notes
make the commit that carries them slow, to put a commit in flight at a chosen moment: on
Postgres a deferred constraint trigger sleeps at COMMIT; on SQLite the handler's own
connection (:meth:`Effects.connection`) sleeps in its trace callback when COMMIT starts
(SQLite ignores what the callback raises: the commit goes on as C code would).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pqueue.broker import FullBroker
from tests.conftest import service_url

SLOW_COMMIT = 1.5
"""Seconds a commit carrying a ``slow`` note takes."""


class Effects:
    """Write and read the effects table of one test's namespace."""

    def __init__(self, backend: str, namespace: str, broker: FullBroker) -> None:
        self.backend = backend
        if backend == "postgres":
            url = service_url("postgres")
            assert url is not None
            self.url = url
            self.table = sql.Identifier(namespace, "effects")
            self.insert_sql = sql.SQL("INSERT INTO {} (job_id, note) VALUES (%s, %s)").format(self.table)
            slow = sql.Identifier(namespace, "slow_commit")
            with psycopg.connect(url, autocommit=True) as conn:
                table = sql.SQL("CREATE TABLE {} (job_id text NOT NULL, note text NOT NULL)")
                conn.execute(table.format(self.table))
                conn.execute(
                    sql.SQL(
                        "CREATE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                        "IF NEW.note LIKE 'slow%%' THEN PERFORM pg_sleep({}); END IF; RETURN NULL; END $$"
                    ).format(slow, sql.Literal(SLOW_COMMIT))
                )
                conn.execute(
                    sql.SQL(
                        "CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON {} "
                        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {}()"
                    ).format(self.table, slow)
                )
        else:
            self.path = str(broker.config.path)  # type: ignore[attr-defined]
            with contextlib.closing(sqlite3.connect(self.path)) as conn, conn:
                conn.execute("CREATE TABLE effects (job_id TEXT NOT NULL, note TEXT NOT NULL)")

    def write(self, conn: Any, job_id: str, note: str) -> None:
        """Insert from a sync handler (or from any handler on SQLite: sqlite3 is sync)."""
        if self.backend == "postgres":
            conn.execute(self.insert_sql, [job_id, note])
        else:
            conn.execute("INSERT INTO effects (job_id, note) VALUES (?, ?)", [job_id, note])

    async def awrite(self, conn: Any, job_id: str, note: str) -> None:
        """Insert from an async handler."""
        if self.backend == "postgres":
            await conn.execute(self.insert_sql, [job_id, note])
        else:
            self.write(conn, job_id, note)

    def connection(self) -> Any:
        """A connection of the handler's own whose COMMIT is slow when ``slow`` rows ride on it
        (SQLite); None on Postgres, where the trigger makes any commit of such a row slow."""
        if self.backend == "postgres":
            return None
        conn = sqlite3.connect(self.path, timeout=30)

        def trace(statement: str) -> None:
            if statement.strip().upper().startswith("COMMIT"):
                time.sleep(SLOW_COMMIT)

        conn.set_trace_callback(trace)
        return conn

    def rows(self) -> list[tuple[str, str]]:
        if self.backend == "postgres":
            with psycopg.connect(self.url, autocommit=True) as conn:
                query = sql.SQL("SELECT job_id, note FROM {} ORDER BY note").format(self.table)
                return [(str(a), str(b)) for a, b in conn.execute(query).fetchall()]
        with contextlib.closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute("SELECT job_id, note FROM effects ORDER BY note")
            return [(str(a), str(b)) for a, b in rows]


@pytest.fixture
def effects(backend_name: str, namespace: str, broker: FullBroker) -> Effects:
    return Effects(backend_name, namespace, broker)
