"""pqueue adapter for the shared peer harness (``../shared/bench-peers/harness.py``).

One adapter serves every backend: the DSN comes from ``BENCH_PQUEUE_DSN`` (default
``redis://127.0.0.1:6379/8``, the harness's own Redis DB). Postgres runs use the schema
``pqueue_bench`` in the harness's database, e.g.
``BENCH_PQUEUE_DSN=postgresql://postgres@127.0.0.1:5432/bench_peers?schema=pqueue_bench``.
SQLite runs (against huey's ``SqliteHuey``, the ``huey_sqlite`` adapter) use a file named
``pqueue_bench*.db``, deleted and migrated anew by ``setup``, e.g.
``BENCH_PQUEUE_DSN=sqlite:////tmp/bench-sqlite/pqueue_bench.db``.

Run from the harness folder, with a Python that has pqueue installed::

    BENCH_ADAPTER_DIRS=<project>/bench/peers python harness.py --adapter pqueue --scenario drain --procs 2

Workers are ``pqueue worker pqueue_adapter:router --concurrency C`` (C asyncio handler
slots per process, like the peers' 10 threads or tasks), started with the same Python.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

import common  # the harness's recorder and settings

import pqueue

DSN = os.environ.get("BENCH_PQUEUE_DSN", "redis://127.0.0.1:6379/8")
TYPE = "bench:noop"

router = pqueue.Router()


@router.task(TYPE, queue=common.QUEUE, max_retries=0)
async def noop(job: pqueue.Job) -> None:
    """The harness's no-op: record the handler start against the producer's timestamp."""
    await common.arecord(float(job.payload))


def _wipe() -> None:
    """Remove every pqueue job of the bench namespace (the harness's own DB or schema)."""
    scheme = urlsplit(DSN).scheme
    if scheme.startswith("redis"):
        common.flush_redis_db(DSN.split("?", 1)[0])  # refuses anything but DBs 8..12
        return
    if scheme == "sqlite":
        from pqueue.brokers.sqlite import migrate as migrate_sqlite
        from pqueue.brokers.sqlite.config import SqliteConfig

        path = SqliteConfig.from_url(DSN).path
        assert os.path.basename(path).startswith("pqueue_bench"), "the bench only wipes its own file"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        migrate_sqlite(DSN)
        return
    from pqueue.brokers.postgres import migrate
    from pqueue.brokers.postgres.config import PostgresConfig

    config = PostgresConfig.from_url(DSN)
    assert config.schema.startswith("pqueue_bench"), "the bench only wipes its own schema"
    common.pg_exec(f"DROP SCHEMA IF EXISTS {config.schema} CASCADE")
    migrate(DSN)


class Adapter:
    name = "pqueue"
    version = pqueue.__version__
    batch_api = "Client.enqueue_map(type, payloads) (one round trip per chunk)"
    concurrency_note = "asyncio handler slots per process (--concurrency C)"

    def setup(self) -> None:
        _wipe()

    cleanup = setup

    def open_producer(self) -> None:
        # The blocking Client, called directly as huey's adapter calls huey: on Redis and
        # Postgres it enqueues from this thread (ADR 0120), not through a loop thread.
        self.client = pqueue.Client(DSN)
        self.client.open()

    def close_producer(self) -> None:
        self.client.close()

    def enqueue(self, ts: float) -> None:
        self.client.enqueue(TYPE, ts, queue=common.QUEUE, max_retries=0)

    def enqueue_batch(self, tss: list[float]) -> None:
        # One job type, many payloads: pqueue's bulk API for that (pgqueuer's batch call takes
        # lists the same way). enqueue_many([Task, ...]) costs ~2.5 us more per job.
        self.client.enqueue_map(TYPE, tss, queue=common.QUEUE, max_retries=0)

    def worker_cmd(self, concurrency: int) -> list[str]:
        return [
            sys.executable, "-m", "pqueue", "worker", "pqueue_adapter:router",
            "--dsn", DSN, "--queues", common.QUEUE, "--concurrency", str(concurrency),
            "--log-level", "WARNING",
        ]  # fmt: skip
