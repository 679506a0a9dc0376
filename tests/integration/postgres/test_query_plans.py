"""Every named query's plan over a realistically sized table: no JIT, no sequential scan of jobs.

Stock Postgres (Debian's, most managed services) runs with ``jit = on``: a plan whose
estimated cost passes ``jit_above_cost`` (100,000) pays LLVM compilation, 100 ms and
more, on every call, and the ``activity`` query once did so on each ``stats()`` (issue 34, ADR
0156). So each query of ``queries.sql`` is EXPLAINed here, with the arguments the broker
would pass (``SAMPLES``), over 200,000 retained jobs with priorities in this test's own
schema, in a session with JIT on at the default thresholds; a plan with a JIT section or
a sequential scan of ``jobs`` fails the test, and so does a query without sample
arguments, so a new query is covered the day it is written.

The plans are custom plans for these arguments (PG15 has no ``EXPLAIN (GENERIC_PLAN)``);
a prepared statement switches to its generic plan only when that costs about as much.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.sql import queries_for
from tests.conftest import service_url

RETAINED = 200_000
"""Completed, cancelled and dead jobs kept (within the retention window)."""
QUEUES = ("default", "emails", "reports", "billing")
JIT_DEFAULTS = {
    "jit_above_cost": "100000",
    "jit_inline_above_cost": "500000",
    "jit_optimize_above_cost": "500000",
}
"""Postgres's built-in thresholds, set in the session whatever the server's configuration."""

FILL = (
    """
    ALTER TABLE {s}.jobs DISABLE TRIGGER USER
    """,
    """
    -- The history: finished over the last 23 hours (inside the default retention), a third of
    -- it with a priority in -100..100; uuids in order, as uuidv7 ids are.
    INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, started_at,
                          finished_at, attempt, max_retries, max_recoveries, priority, result)
    SELECT lpad(to_hex(g), 32, '0')::uuid, q.names[1 + g %% 4], 'app:task',
           CASE WHEN g %% 50 = 0 THEN 'dead' WHEN g %% 20 = 0 THEN 'cancelled' ELSE 'completed' END,
           json_build_object('i', g), t, t, t, t + interval '20 ms', 1, 3, 5,
           CASE WHEN g %% 3 = 0 THEN g %% 201 - 100 ELSE 0 END, 'null'
    FROM generate_series(1, %(retained)s) AS g,
         LATERAL (SELECT now() - make_interval(secs => 82800 * (1 - g::float8 / %(retained)s)) AS t) AS at,
         (SELECT ARRAY['default', 'emails', 'reports', 'billing'] AS names) AS q
    """,
    """
    -- The live jobs: a backlog of pending jobs (a third prioritized), scheduled jobs due
    -- later, retrying ones of which half are due (not promoted yet), running ones, jobs
    -- waiting for a parent, and limited ones.
    INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, started_at,
                          lease_token, lease_expires_at, worker_id, attempt, max_retries,
                          max_recoveries, priority, limit_key, limit_concurrency, parents_left)
    SELECT lpad(to_hex(%(retained)s + g), 32, '0')::uuid, q.names[1 + g %% 4], 'app:task', s.status,
           json_build_object('i', g),
           now() + CASE s.status WHEN 'scheduled' THEN interval '1 hour' * random()
                                 WHEN 'retry' THEN interval '30 s' * (random() - 0.5)
                                 ELSE -interval '1 min' * random() END,
           now() - interval '1 min', CASE s.status WHEN 'active' THEN now() END,
           CASE s.status WHEN 'active' THEN g END,
           CASE s.status WHEN 'active' THEN now() + interval '30 s' END,
           CASE s.status WHEN 'active' THEN 'worker-1' END, CASE s.status WHEN 'active' THEN 1 ELSE 0 END,
           3, 5, CASE WHEN g %% 3 = 0 THEN g %% 201 - 100 ELSE 0 END,
           CASE WHEN g %% 25 = 0 THEN 'tenant-' || g %% 7 END, CASE WHEN g %% 25 = 0 THEN 2 END,
           CASE s.status WHEN 'waiting' THEN 1 END
    FROM generate_series(1, 6000) AS g,
         LATERAL (SELECT CASE WHEN g %% 10 < 5 THEN 'pending' WHEN g %% 10 < 7 THEN 'scheduled'
                              WHEN g %% 10 = 7 THEN 'retry' WHEN g %% 10 = 8 THEN 'active'
                              ELSE 'waiting' END AS status) AS s,
         (SELECT ARRAY['default', 'emails', 'reports', 'billing'] AS names) AS q
    """,
    """
    ALTER TABLE {s}.jobs ENABLE TRIGGER USER
    """,
    """
    -- The finished counters (migration 0008) hold a row per queue and finished status;
    -- their sizes, not their exact numbers, shape the plans.
    INSERT INTO {s}.finished_counts (queue, status, n)
    SELECT q, s, %(retained)s / 12
    FROM unnest(ARRAY['default', 'emails', 'reports', 'billing']) AS q,
         unnest(ARRAY['completed', 'cancelled', 'dead']) AS s
    """,
    """
    INSERT INTO {s}.queues (name, created_at)
    SELECT unnest(ARRAY['default', 'emails', 'reports', 'billing']), now()
    """,
    """
    INSERT INTO {s}.limit_groups (queue, key)
    SELECT DISTINCT queue, limit_key FROM {s}.jobs WHERE limit_key IS NOT NULL
    """,
    """
    INSERT INTO {s}.job_deps (parent, child)
    SELECT lpad(to_hex(%(retained)s + 1), 32, '0')::uuid, id FROM {s}.jobs WHERE status = 'waiting'
    """,
)

JOB = str(uuid.UUID(int=RETAINED + 1))
"""The first live job (pending)."""
IDS = [uuid.UUID(int=RETAINED + 1 + i) for i in range(100)]
NEW_IDS = [uuid.uuid4() for _ in range(100)]
NOW = datetime.now(UTC)


def _batch(n: int, **columns: Any) -> dict[str, Any]:
    """The array parameters of a batch statement: each column's value repeated n times."""
    return {name: [value] * n for name, value in columns.items()}


_JOB_ARRAYS = _batch(
    100,
    queue="emails",
    type="app:task",
    payload='{"i": 1}',
    at_epoch=None,
    delay=None,
    max_retries=3,
    max_recoveries=5,
    timeout=None,
    idempotency_key=None,
    meta="{}",
    priority=5,
    unset=None,
)
_LIMITS = _batch(100, limit_key=None, limit_rate=None, limit_burst=None, limit_concurrency=None)
_ONE_JOB = {
    "id": NEW_IDS[0],
    "queue": "emails",
    "type": "app:task",
    "payload": '{"i": 1}',
    "at_epoch": None,
    "delay": None,
    "max_retries": 3,
    "max_recoveries": 5,
    "timeout": None,
    "idempotency_key": None,
    "meta": "{}",
    "priority": 5,
    "unset": None,
}
_ERROR = {"kind": "RuntimeError", "message": "boom", "traceback": "Traceback ...", "keep": 10}
_LEASES = {"id": IDS[:10], "token": list(range(10))}
_WORKER = {
    "id": "host-1-w1",
    "host": "host-1",
    "pid": 4242,
    "queues": list(QUEUES),
    "concurrency": 10,
    "started_at": NOW.timestamp(),
    "ttl": 60.0,
    "meta": "{}",
}
_PARK = {
    "queues": list(QUEUES),
    "park": True,
    "park_for": 30.0,
    "worker_id": "host-1-w1",
    "channel": "pqueue_h_0",
    "listener_pid": 4242,
    "listener_start": NOW,
    "lease_for": 60.0,
}

Sample = dict[str, Any]
SAMPLES: dict[str, Sample | list[Sample] | str] = {
    # The hot path, with the arguments a worker or a producer passes.
    "enqueue": {
        "id": NEW_IDS,
        **_JOB_ARRAYS,
        **_LIMITS,
        "unique_key": [f"k{i}" for i in range(100)],
        "unique_for": [3600.0] * 100,
        "unique_until_done": [False] * 100,
    },
    "enqueue_plain": {"id": NEW_IDS, **_JOB_ARRAYS},
    "enqueue_same": {**_ONE_JOB, "id": NEW_IDS, "payload": ['{"i": 1}'] * 100},
    "enqueue_one": {**_ONE_JOB, "handoff": True},
    "enqueue_waiting": {
        "id": NEW_IDS,
        **_JOB_ARRAYS,
        **_LIMITS,
        "parents": [JOB] * 100,
        "on_parent_failure": ["cancel"] * 100,
    },
    "claim": {
        "queues": list(QUEUES),
        "worker_id": "host-1-w1",
        "limit": 10,
        "lease_for": 60.0,
        "unpark": True,
    },
    "ack": _LEASES,
    "ack_results": {**_LEASES, "result": ["null"] * 10},
    "fail": {"id": JOB, "token": 1, "retry_in": 4.0, **_ERROR},
    "release": {**_LEASES, "delay": 0.0, **_ERROR},
    "extend": {**_LEASES, "lease_for": 60.0},
    "recover": {"limit": 100, "keep": 10},
    "promote": {"limit": 1000},
    "look": _PARK,
    "unpark": {"channel": "pqueue_h_0"},
    "notify": {"channel": "pqueue_h_0", "payload": "x"},
    "listener_identity": {},
    "now": {},
    "idempotency_begin": {"key": "charge-1", "owner": "host-1-w1", "ttl": 600.0},
    "idempotency_done": {"key": "charge-1", "owner": "host-1-w1", "ttl": 86400.0},
    "idempotency_release": {"key": "charge-1", "owner": "host-1-w1"},
    "watch": {"id": JOB},
    "flow_lock_parents": {"ids": IDS[:3]},
    "flow_link": {"parent": IDS[:3], "child": NEW_IDS[:3]},
    "flow_settle": {"ids": IDS[:3]},
    # Housekeeping, as workers run it.
    "prune": {"limit": 1000, "retention": 86400.0},
    "fold_counts": {"lock": "pqueue.fold:x"},
    "register_worker": _WORKER,
    "unregister_worker": {"id": "host-1-w1"},
    "register_schedules": {
        "names": ["nightly"],
        "definitions": ['{"name": "nightly"}'],
        "ttl": 60.0,
        "retention": 86400.0,
    },
    "mark_schedule_run": {"name": "nightly", "tick": NOW.timestamp()},
    "schema_version": {},
    "migrate_lock": {"lock": "pqueue.migrate:x"},
    "migrate_applied": {},
    "migrate_record": {"version": 99, "name": "x"},
    "migrate_create_schema": "DDL: EXPLAIN cannot show it, and it reads no table",
    "migrate_bootstrap": "DDL: EXPLAIN cannot show it, and it reads no table",
    # Inspection and admin: stats() (counts, activity, limit_groups, list_workers,
    # paused_queues), the CLI, the HTTP API and the dashboard.
    "counts": {},
    "activity": {"window": 60.0},
    "limit_groups": {},
    "list_workers": {},
    "paused_queues": {},
    "list_queues": {},
    "list_schedules": {},
    "get_job": {"id": JOB},
    "list_jobs": [
        {"status": status, "queue": queue, "type": None, "limit": 50, "offset": 0}
        for status in ("pending", "scheduled", "retry", "active", "waiting")
        for queue in (None, "emails")
    ],
    "list_finished_jobs": [
        {"status": status, "queue": queue, "type": None, "limit": 50, "offset": offset}
        for status in ("completed", "dead", "cancelled")
        for queue in (None, "emails")
        for offset in (0, 500)
    ],
    "cancel": {"id": JOB},
    "cancel_active": {"id": JOB, "channel": "pqueue_c", **_ERROR},
    "requeue_dead": {"queue": None, "ids": None},
    "purge_dead": {"queue": "emails", "ids": None, "older_than": 3600.0},
    "pause": {"queue": "emails"},
    "resume": {"queue": "emails"},
    "scan_jobs": [
        {"statuses": ["dead"], "queue": None, "since": None, "parts": 1, "part": 0},
        {
            "statuses": ["completed", "dead"],
            "queue": "emails",
            "since": NOW.timestamp() - 3600,
            "parts": 4,
            "part": 1,
        },
    ],
}
"""Per named query: representative arguments (one set or several), or why it cannot be
EXPLAINed. ``now`` is added (NULL: the server's clock, as in production)."""

MAY_SCAN_JOBS = {
    "scan_jobs": (
        "the bulk export (Inspector.scan_jobs: the Spark reader, the history export by day) "
        "returns every job of its statuses since a time, in one slice of seq, through a "
        "server-side cursor: when that is much of the table, reading the table in order is "
        "the cheapest plan there is, run once per export; its JIT is still checked"
    ),
}
"""Queries whose plan may read jobs sequentially, with the reason why."""


@pytest.fixture(scope="module")
def filled() -> Iterator[tuple[str, str]]:
    """(server URL, schema): a migrated schema of this module's own, filled and analysed."""
    url = service_url("postgres")
    assert url is not None
    schema = f"pqplan{uuid.uuid4().hex[:12]}"
    migrate(f"{url}?schema={schema}")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            name = sql.Identifier(schema)
            for statement in FILL:
                conn.execute(sql.SQL(statement).format(s=name), {"retained": RETAINED})  # type: ignore[arg-type]
            # Statistics, as autovacuum's analyze keeps them; no vacuum: a queue table churns,
            # so few of its pages are all-visible and index-only scans are costed as such.
            conn.execute(sql.SQL("ANALYZE {}.jobs").format(name))
        yield url, schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _faults(plan: dict[str, Any], *, may_scan: bool) -> list[str]:
    """What is wrong with one EXPLAIN (FORMAT JSON) answer."""
    faults = []
    if "JIT" in plan:
        faults.append(f"JIT compiles it (total cost {plan['Plan']['Total Cost']:,.0f})")
    nodes = [plan["Plan"]]
    while nodes:
        node = nodes.pop()
        if node["Node Type"] == "Seq Scan" and node.get("Relation Name") == "jobs" and not may_scan:
            faults.append(f"sequential scan of jobs (as {node.get('Alias')})")
        nodes.extend(node.get("Plans", ()))
    return faults


def test_every_named_query_has_sample_arguments() -> None:
    names = queries_for("pqueue").names()
    assert sorted(names - SAMPLES.keys()) == [], "add sample arguments to SAMPLES for these queries"
    assert sorted(SAMPLES.keys() - names) == [], "SAMPLES names queries that no longer exist"


def test_no_named_query_is_jit_compiled_or_scans_jobs(filled: tuple[str, str]) -> None:
    url, schema = filled
    queries = queries_for(schema)
    faults: dict[str, list[str]] = {}
    with psycopg.connect(url) as conn:
        conn.execute("SET jit = on")
        for setting, value in JIT_DEFAULTS.items():
            conn.execute(sql.SQL("SET {} = {}").format(sql.Identifier(setting), sql.Literal(value)))
        assert conn.execute("SHOW jit").fetchone() == ("on",)
        for name in sorted(queries.names()):
            sample = SAMPLES.get(name)
            if sample is None:
                faults[name] = ["no sample arguments in SAMPLES: add them"]
                continue
            if isinstance(sample, str):
                continue  # not explainable: the entry says why
            for arguments in sample if isinstance(sample, list) else [sample]:
                with conn.transaction(force_rollback=True):
                    text = "EXPLAIN (FORMAT JSON) " + queries[name]
                    [(answer,)] = conn.execute(text, {**arguments, "now": None}).fetchall()  # type: ignore[arg-type]
                plan = answer[0] if isinstance(answer, list) else json.loads(answer)[0]
                if found := _faults(plan, may_scan=name in MAY_SCAN_JOBS):
                    faults.setdefault(name, []).extend(f"{fault} with {arguments}" for fault in found)
    assert faults == {}, json.dumps(faults, indent=1)
