"""The SQLite backend (``sqlite:///path.db``): see docs/sqlite.md.

``SqliteBroker`` is what :func:`pqueue.connect` returns for these DSNs; :func:`migrate`
creates or upgrades the file; :func:`enqueue_in` puts jobs on the application's own
transaction. Only the standard library's ``sqlite3`` is needed.
"""

from pqueue.brokers.sqlite.broker import SqliteBroker
from pqueue.brokers.sqlite.migrate import current_version, migrate, migrate_async
from pqueue.brokers.sqlite.transactional import enqueue_in

__all__ = ["SqliteBroker", "migrate", "migrate_async", "current_version", "enqueue_in"]
