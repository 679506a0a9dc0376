"""One reusable cursor per pooled connection, for the statements the brokers run one by one.

A fresh psycopg cursor starts with an empty cache of parameter dumpers and re-learns the
dumper of every parameter type on its first statement: 10-30 µs of CPU per statement for
pqueue's enqueue, claim and ack, more than the rest of the client's work on them. A cursor
kept with its connection does that once. A cursor is dropped (and its result freed) after
an error, or after a result of more than :data:`KEEP_AFTER_ROWS` rows, so a large listing
is not held in memory until the connection's next statement.
"""

from __future__ import annotations

import weakref
from typing import Any

from psycopg.rows import RowFactory

KEEP_AFTER_ROWS = 64
"""A cursor whose last result had more rows than this is not kept."""


class CursorCache:
    """Cursors by connection; a connection is used by one caller at a time (the pool's
    rule), so its cursor is too."""

    def __init__(self) -> None:
        self._cursors: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def cursor(self, conn: Any, row_factory: RowFactory[Any]) -> Any:
        """``conn``'s kept cursor, set to ``row_factory`` (a new one the first time)."""
        cur = self._cursors.get(conn)
        if cur is None or cur.closed:
            cur = self._cursors[conn] = conn.cursor(row_factory=row_factory)
        elif cur.row_factory is not row_factory:
            cur.row_factory = row_factory
        return cur

    def done(self, conn: Any, rows: int) -> None:
        """After a statement: forget ``conn``'s cursor if its result is large."""
        if rows > KEEP_AFTER_ROWS:
            self._cursors.pop(conn, None)

    def forget(self, conn: Any) -> None:
        """After an error: the next statement on ``conn`` gets a new cursor."""
        self._cursors.pop(conn, None)
