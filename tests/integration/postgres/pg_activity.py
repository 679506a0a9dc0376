"""Look at (and end) the server sessions of one schema's brokers, by application_name."""

from __future__ import annotations

import psycopg


def sessions(pg_url: str, schema: str) -> list[tuple[int, str]]:
    """(pid, last query) of every connection a broker on ``schema`` holds."""
    with psycopg.connect(pg_url) as conn:
        return conn.execute(
            "SELECT pid, query FROM pg_stat_activity WHERE application_name = %s ORDER BY pid",
            [f"pqueue/{schema}"],
        ).fetchall()


def listeners(pg_url: str, schema: str) -> list[int]:
    return [pid for pid, query in sessions(pg_url, schema) if query.startswith("-- pqueue:listen")]


def terminate(pg_url: str, schema: str) -> int:
    """pg_terminate_backend every connection of ``schema``'s brokers; returns how many."""
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            [f"pqueue/{schema}"],
        ).fetchall()
    return sum(1 for (ok,) in rows if ok)
