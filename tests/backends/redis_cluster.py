"""The Redis backend on a Redis Cluster (``redis+cluster://``): one key prefix per test.

The cluster is six private nodes the session starts (tests/private_cluster.py), or the
one ``PQUEUE_TEST_REDIS_CLUSTER_URL`` names. Cleanup scans every master.
"""

from __future__ import annotations

from tests.backends.redis import cleanup, namespace_dsn

__all__ = ["NAME", "SERVICE", "cleanup", "namespace_dsn"]

NAME = "redis_cluster"
SERVICE = "redis_cluster"
