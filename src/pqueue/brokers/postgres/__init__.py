"""The Postgres backend (``postgresql://``, ``postgres://``): see docs/postgres.md.

``PostgresBroker`` is what :func:`pqueue.connect` returns for these DSNs; :func:`migrate`
creates or upgrades its schema; :func:`enqueue_in` / :func:`enqueue_in_sync` put jobs on
the caller's own transaction.
"""

from pqueue.brokers.postgres.broker import PostgresBroker
from pqueue.brokers.postgres.migrate import current_version, migrate, migrate_async
from pqueue.brokers.postgres.transactional import enqueue_in, enqueue_in_sync

__all__ = ["PostgresBroker", "migrate", "migrate_async", "current_version", "enqueue_in", "enqueue_in_sync"]
