"""The pqueue tables as SQLAlchemy Core ``Table`` objects, for apps that query them.

The migrations in ``migrations/`` are the schema's source (ADR 0010); this module mirrors
them, and tests/integration/postgres/test_schema_agrees.py proves the two agree by building
a schema from each and comparing the catalogs. The broker itself never imports SQLAlchemy.

    from pqueue.brokers.postgres.schema import tables
    jobs = tables("pqueue")["jobs"]
    select(jobs.c.queue, func.count()).where(jobs.c.status == "dead").group_by(jobs.c.queue)
"""

from __future__ import annotations

from functools import cache
from types import MappingProxyType

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Double,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Sequence,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB, TIMESTAMP, UUID

from pqueue.brokers.postgres.sql import validate_schema

_LIVE = "status IN ('pending', 'scheduled', 'retry')"
STATUSES = ("pending", "scheduled", "active", "retry", "completed", "dead", "cancelled", "waiting")


def _ts(name: str, *, nullable: bool = False) -> Column[object]:
    return Column(name, TIMESTAMP(timezone=True), nullable=nullable)


def _jobs(md: MetaData, schema: str) -> Table:
    statuses = ", ".join(f"'{s}'" for s in STATUSES)
    return Table(
        "jobs",
        md,
        Column("id", UUID(as_uuid=False), nullable=False),
        Column(
            "seq", BigInteger, nullable=False, server_default=text(f"nextval('{schema}.job_seq'::regclass)")
        ),
        _ts("run_at"),
        _ts("created_at"),
        _ts("started_at", nullable=True),
        _ts("finished_at", nullable=True),
        _ts("lease_expires_at", nullable=True),
        Column("lease_token", BigInteger),
        Column("timeout", Double),
        Column("attempt", Integer, nullable=False, server_default=text("0")),
        Column("max_retries", Integer, nullable=False),
        Column("recoveries", Integer, nullable=False, server_default=text("0")),
        Column("max_recoveries", Integer, nullable=False),
        Column("status", Text, nullable=False),
        Column("queue", Text, nullable=False),
        Column("type", Text, nullable=False),
        Column("payload", JSON, nullable=False),
        Column("meta", JSON, nullable=False, server_default=text("'{}'::json")),
        Column("errors", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
        Column("result", JSON),
        Column("unique_key", Text),
        Column("idempotency_key", Text),
        Column("worker_id", Text),
        # 0005_workflows
        Column("depends_on", ARRAY(UUID(as_uuid=False))),
        Column("parent_results", JSONB),
        Column("on_parent_failure", Text),
        Column("parents_left", Integer),
        Column("has_children", Boolean, nullable=False, server_default=text("false")),
        Column("watched", Boolean, nullable=False, server_default=text("false")),
        # migration 0006: a job's rate/concurrency limit (ADR 0110)
        Column("limit_key", Text),
        Column("limit_rate", Double),
        Column("limit_burst", Double),
        Column("limit_concurrency", Integer),
        # migration 0010: the job's priority within its queue (ADR 0145)
        Column("priority", SmallInteger, nullable=False, server_default=text("0")),
        # migration 0012: the run-time options left to the job's handler (ADR 0157)
        Column("unset", Text),
        PrimaryKeyConstraint("id", name="jobs_pkey"),
        CheckConstraint(f"status IN ({statuses})", name="jobs_status_check"),
        CheckConstraint("status <> 'active' OR lease_token IS NOT NULL", name="jobs_lease_check"),
        # migration 0007: a token only on an active job (ADR 0131)
        CheckConstraint("lease_token IS NULL OR status = 'active'", name="jobs_token_only_active"),
        # migration 0010: due jobs with a priority are in jobs_prioritized instead (ADR 0145)
        Index(
            "jobs_claim",
            "queue",
            "run_at",
            "seq",
            postgresql_where=text(f"{_LIVE} AND (priority = 0 OR status <> 'pending')"),
        ),
        Index("jobs_delayed", "run_at", postgresql_where=text("status IN ('scheduled', 'retry')")),
        Index("jobs_leases", "lease_expires_at", postgresql_where=text("status = 'active'")),
        Index("jobs_finished", "finished_at", postgresql_where=text("status IN ('completed', 'cancelled')")),
        Index("jobs_dead", "queue", "seq", postgresql_where=text("status = 'dead'")),
        Index(
            "jobs_limited",
            "queue",
            "limit_key",
            "run_at",
            "seq",
            postgresql_where=text(f"{_LIVE} AND limit_key IS NOT NULL"),
        ),
        Index(
            "jobs_limit_active",
            "queue",
            "limit_key",
            postgresql_where=text("status = 'active' AND limit_key IS NOT NULL"),
        ),
        # migration 0010: prioritized jobs only (ADR 0145)
        Index(
            "jobs_prioritized",
            "queue",
            text("priority DESC"),
            "run_at",
            "seq",
            postgresql_where=text("status = 'pending' AND priority <> 0"),
        ),
        # migration 0011: prioritized jobs waiting to be due, claimed once due (ADR 0156)
        Index(
            "jobs_prioritized_delayed",
            "run_at",
            postgresql_where=text("status IN ('scheduled', 'retry') AND priority <> 0"),
        ),
        # migration 0008: counts and activity without reading the history (ADR 0139)
        Index("jobs_waiting", "queue", postgresql_where=text("status = 'waiting'")),
        Index("jobs_died", "finished_at", postgresql_where=text("status = 'dead'")),
        postgresql_with={
            "fillfactor": "80",
            "autovacuum_vacuum_scale_factor": "0.02",
            "autovacuum_vacuum_insert_scale_factor": "0.02",
            "autovacuum_analyze_scale_factor": "0.02",
        },
    )


def _small_tables(md: MetaData) -> None:
    Table(
        "queues",
        md,
        Column("name", Text, nullable=False),
        _ts("created_at"),
        PrimaryKeyConstraint("name", name="queues_pkey"),
    )
    Table(
        "unique_keys",
        md,
        Column("queue", Text, nullable=False),
        Column("key", Text, nullable=False),
        Column("job_id", UUID(as_uuid=False), nullable=False),
        _ts("expires_at"),
        Column("until_done", Boolean, nullable=False, server_default=text("false")),
        PrimaryKeyConstraint("queue", "key", name="unique_keys_pkey"),
        Index("unique_keys_expiry", "expires_at"),
    )
    Table(
        "idempotency_keys",
        md,
        Column("key", Text, nullable=False),
        Column("owner", Text, nullable=False),
        Column("state", Text, nullable=False),
        _ts("expires_at"),
        PrimaryKeyConstraint("key", name="idempotency_keys_pkey"),
        CheckConstraint("state IN ('in_flight', 'done')", name="idempotency_keys_state_check"),
        Index("idempotency_keys_expiry", "expires_at"),
    )
    Table(
        "workers",
        md,
        Column("id", Text, nullable=False),
        Column("host", Text, nullable=False),
        Column("pid", Integer, nullable=False),
        Column("queues", ARRAY(Text), nullable=False),
        Column("concurrency", Integer, nullable=False),
        _ts("started_at"),
        _ts("last_seen"),
        _ts("expires_at"),
        Column("meta", JSON, nullable=False, server_default=text("'{}'::json")),
        PrimaryKeyConstraint("id", name="workers_pkey"),
    )
    Table(
        "parked",
        md,
        Column("queue", Text, nullable=False),
        Column("worker_id", Text, nullable=False),
        Column("channel", Text, nullable=False),
        Column("listener_pid", Integer, nullable=False),
        _ts("listener_start"),
        Column("lease_for", Double, nullable=False),
        _ts("expires_at"),
        PrimaryKeyConstraint("queue", "worker_id", name="parked_pkey"),
        prefixes=["UNLOGGED"],
    )
    Table(
        "paused_queues",
        md,
        Column("queue", Text, nullable=False),
        _ts("paused_at"),
        PrimaryKeyConstraint("queue", name="paused_queues_pkey"),
    )
    Table(
        "job_deps",
        md,
        Column("parent", UUID(as_uuid=False), nullable=False),
        Column("child", UUID(as_uuid=False), nullable=False),
        PrimaryKeyConstraint("parent", "child", name="job_deps_pkey"),
    )
    Table(
        "limit_groups",
        md,
        Column("queue", Text, nullable=False),
        Column("key", Text, nullable=False),
        Column("tokens", Double),
        _ts("refilled_at", nullable=True),
        _ts("wake_at", nullable=True),
        Column("held", Boolean, nullable=False, server_default=text("false")),
        Column("rate", Double),
        Column("burst", Double),
        Column("concurrency", Integer),
        PrimaryKeyConstraint("queue", "key", name="limit_groups_pkey"),
    )
    # migration 0008: finished jobs counted by the jobs table's triggers (ADR 0139)
    Table(
        "finished_counts",
        md,
        Column("queue", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("n", BigInteger, nullable=False),
        PrimaryKeyConstraint("queue", "status", name="finished_counts_pkey"),
    )
    Table(
        "finished_deltas",
        md,
        Column("queue", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("n", Integer, nullable=False),
        postgresql_with={
            "autovacuum_vacuum_scale_factor": "0",
            "autovacuum_vacuum_threshold": "5000",
            "autovacuum_vacuum_insert_scale_factor": "0",
            "autovacuum_vacuum_insert_threshold": "5000",
        },
    )
    Table(
        "migrations",
        md,
        Column("version", Integer, nullable=False, autoincrement=False),
        Column("name", Text, nullable=False),
        Column(
            "applied_at",
            TIMESTAMP(timezone=True),
            nullable=False,
            server_default=text("statement_timestamp()"),
        ),
        PrimaryKeyConstraint("version", name="migrations_pkey"),
    )


def _schedules(md: MetaData) -> None:
    """Migration 0003: the schedules workers register (periodic jobs)."""
    Table(
        "schedules",
        md,
        Column("name", Text, nullable=False),
        Column("definition", JSONB, nullable=False),
        _ts("since"),
        _ts("last_run_at", nullable=True),
        _ts("expires_at"),
        PrimaryKeyConstraint("name", name="schedules_pkey"),
    )


@cache
def metadata(schema: str = "pqueue") -> MetaData:
    """Every pqueue table of ``schema`` (with the sequences the jobs table uses)."""
    validate_schema(schema)
    md = MetaData(schema=schema)
    Sequence("job_seq", metadata=md, data_type=BigInteger)
    Sequence("lease_token", metadata=md, data_type=BigInteger, cache=64)
    _jobs(md, schema)
    _small_tables(md)
    _schedules(md)
    return md


def tables(schema: str = "pqueue") -> MappingProxyType[str, Table]:
    """The tables of ``schema`` by short name (``jobs``, ``queues``, ``unique_keys``, ...)."""
    return MappingProxyType({t.name: t for t in metadata(schema).sorted_tables})
