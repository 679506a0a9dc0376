"""Where an enqueue goes relative to the request's database transaction (docs/django.md).

1. **Joined.** The DSN is Postgres, the Django database (``OPTIONS["DATABASE"]``) is the
   same server and database on psycopg 3, and an atomic block is open: the job row is
   inserted on Django's own connection, inside that transaction (the Postgres broker's
   ``enqueue_in_sync``). A rollback leaves no job; a commit
   makes it visible and wakes the workers (the NOTIFY is delivered at commit), with no
   window in between.
2. **Deferred.** Any other broker inside an atomic block: ``transaction.on_commit`` sends
   it after the outermost block commits, and a rollback drops it. A crash between the
   commit and the send loses the job: this is the dual write the joined path avoids.
3. **Direct.** Outside atomic blocks (autocommit): sent at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connections, transaction

from pqueue.job import EnqueueResult, JobSpec

LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})


def _host(value: object) -> str:
    text = str(value or "")
    return "local" if text in LOCAL_HOSTS or text.startswith("/") else text


def same_database(conninfo: str, database: str) -> bool:
    """Whether Django's database ``database`` is the Postgres database of libpq's
    ``conninfo``, reached through psycopg 3 (so its connection can run the enqueue)."""
    conn = connections[database]
    if conn.vendor != "postgresql" or not _is_psycopg3():
        return False
    from psycopg.conninfo import conninfo_to_dict

    ours = conninfo_to_dict(conninfo)
    theirs = conn.settings_dict
    return (
        str(ours.get("dbname") or "") == str(theirs.get("NAME") or "")
        and _host(ours.get("host")) == _host(theirs.get("HOST"))
        and str(ours.get("port") or 5432) == str(theirs.get("PORT") or 5432)
    )


def _is_psycopg3() -> bool:
    """Whether Django's Postgres backend runs on psycopg 3 (not psycopg2) in this process."""
    try:
        from django.db.backends.postgresql.psycopg_any import is_psycopg3
    except ImportError:  # pragma: no cover - Django < 4.2
        return False
    return bool(is_psycopg3)


class Placement:
    """Sends one job spec by the rule above; built once per backend.

    The broker of the DSN (made, never opened) hands out what the joined path needs: a
    Postgres broker has ``enqueue_in_sync`` and its ``config.conninfo``. Nothing here
    names a backend's module (tests/unit/test_layers.py).
    """

    def __init__(self, dsn: str, database: str) -> None:
        from pqueue.brokers import connect

        self.database = database
        broker = connect(dsn)
        self._enqueue_in: Callable[[Any, list[JobSpec]], list[EnqueueResult]] | None = getattr(
            broker, "enqueue_in_sync", None
        )
        conninfo = getattr(getattr(broker, "config", None), "conninfo", None)
        self.joins = (
            self._enqueue_in is not None and isinstance(conninfo, str) and same_database(conninfo, database)
        )

    def send(self, spec: JobSpec, direct: Callable[[], Any]) -> str:
        """Store ``spec`` joined, deferred or directly (``direct()`` sends it through the
        client); returns the id the result will be found under."""
        conn = transaction.get_connection(self.database)
        if not conn.in_atomic_block:
            return str(direct())
        if self.joins and self._enqueue_in is not None:
            conn.ensure_connection()
            [result] = self._enqueue_in(conn.connection, [spec])
            return result.id
        transaction.on_commit(direct, using=self.database)
        return spec.id
