"""The brokers keep one cursor per pooled connection, and let go of it when they should."""

from __future__ import annotations

from typing import Any

from pqueue.brokers.postgres.cursors import KEEP_AFTER_ROWS, CursorCache


class FakeCursor:
    def __init__(self, row_factory: Any) -> None:
        self.row_factory = row_factory
        self.closed = False


class FakeConnection:
    def __init__(self) -> None:
        self.made: list[FakeCursor] = []

    def cursor(self, *, row_factory: Any) -> FakeCursor:
        self.made.append(FakeCursor(row_factory))
        return self.made[-1]


def tuples(cursor: Any) -> Any: ...
def dicts(cursor: Any) -> Any: ...


def test_a_connection_keeps_its_cursor_and_switches_its_row_factory() -> None:
    cache, conn = CursorCache(), FakeConnection()
    first = cache.cursor(conn, tuples)
    assert cache.cursor(conn, tuples) is first
    assert cache.cursor(conn, dicts) is first and first.row_factory is dicts
    assert cache.cursor(FakeConnection(), tuples) is not first  # one per connection


def test_a_large_result_an_error_or_a_closed_cursor_gets_a_new_one() -> None:
    cache, conn = CursorCache(), FakeConnection()
    cache.cursor(conn, tuples)
    cache.done(conn, KEEP_AFTER_ROWS)
    assert len(conn.made) == 1 and cache.cursor(conn, tuples) is conn.made[0]
    cache.done(conn, KEEP_AFTER_ROWS + 1)  # its result would stay in memory until the next statement
    cache.cursor(conn, tuples)
    cache.forget(conn)
    cache.cursor(conn, tuples)
    conn.made[-1].closed = True
    cache.cursor(conn, tuples)
    assert len(conn.made) == 4
