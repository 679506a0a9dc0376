"""Where an enqueue goes relative to the request's database transaction (docs/django.md).

1. **Joined.** The DSN is Postgres, the Django database (``OPTIONS["DATABASE"]``) is the
   same server and database on psycopg 3, and an atomic block is open: the job row is
   inserted on Django's own connection, inside that transaction
   (:func:`pqueue.brokers.postgres.enqueue_in_sync`). A rollback leaves no job; a commit
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

from pqueue.job import JobSpec

LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})


def _host(value: object) -> str:
    text = str(value or "")
    return "local" if text in LOCAL_HOSTS or text.startswith("/") else text


def same_database(dsn: str, database: str) -> bool:
    """Whether Django's database ``database`` is the Postgres database ``dsn`` names, reached
    through psycopg 3 (so its connection can run pqueue's enqueue statement)."""
    if not dsn.startswith(("postgresql://", "postgres://")):
        return False
    conn = connections[database]
    if conn.vendor != "postgresql" or not _is_psycopg3():
        return False
    from psycopg.conninfo import conninfo_to_dict

    from pqueue.brokers.postgres.config import PostgresConfig

    ours = conninfo_to_dict(PostgresConfig.from_url(dsn).conninfo)
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
    """Sends one job spec by the rule above; built once per backend."""

    def __init__(self, dsn: str, database: str, schema: str | None) -> None:
        self.database = database
        self.joins = same_database(dsn, database)
        self.schema = schema

    def send(self, spec: JobSpec, direct: Callable[[], Any]) -> str:
        """Store ``spec`` joined, deferred or directly (``direct()`` sends it through the
        client); returns the id the result will be found under."""
        conn = transaction.get_connection(self.database)
        if not conn.in_atomic_block:
            return str(direct())
        if self.joins:
            from pqueue.brokers.postgres import enqueue_in_sync
            from pqueue.brokers.postgres.config import DEFAULT_SCHEMA

            conn.ensure_connection()
            [result] = enqueue_in_sync(conn.connection, [spec], schema=self.schema or DEFAULT_SCHEMA)
            return result.id
        transaction.on_commit(direct, using=self.database)
        return spec.id
