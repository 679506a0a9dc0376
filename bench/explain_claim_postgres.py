"""Print the plan of pqueue's claim statement on a table with many completed jobs.

Migrates a throw-away schema, writes ``--completed`` completed and ``--pending`` pending
jobs (three queues), vacuums, and runs ``EXPLAIN (ANALYZE, BUFFERS)`` of the claim with a
generic plan (what a prepared statement uses), then drops the schema. docs/postgres.md
shows its output.

    python bench/explain_claim_postgres.py --dsn postgresql://postgres@127.0.0.1/pqueue_bench
"""

from __future__ import annotations

import argparse
from pathlib import Path

import psycopg
from psycopg import sql

from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.sql import queries_for

FILL = Path(__file__).with_name("ceilings_postgres") / "fill.sql"
PENDING = """
INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, max_retries, max_recoveries)
SELECT gen_random_uuid(), (ARRAY['high', 'default', 'low'])[1 + g %% 3], 'bench.noop', 'pending',
       json_build_object('i', g), now() - interval '1 hour' + g * interval '1 ms', now(), 3, 5
FROM generate_series(1, %(n)s) AS g
"""
EXAMPLE = {
    "queues": ["high", "default", "low"],
    "limit": 100,
    "lease_for": 30.0,
    "worker_id": "w",
    "now": None,
}
LITERALS = {
    "queues": "'{high,default,low}'::text[]",
    "limit": "100",
    "lease_for": "30",
    "worker_id": "'w'",
    "now": "NULL",
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True, help="database URL (without ?schema=)")
    parser.add_argument("--schema", default="explain_claim")
    parser.add_argument("--completed", type=int, default=1_000_000)
    parser.add_argument("--pending", type=int, default=30_000)
    args = parser.parse_args()
    migrate(args.dsn, schema=args.schema)
    schema = sql.Identifier(args.schema)
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        try:
            fill = FILL.read_text().replace(':"schema"', schema.as_string(conn)).split("VACUUM")[0]
            conn.execute(fill.replace(":completed", str(args.completed)))  # type: ignore[arg-type]
            conn.execute(sql.SQL(PENDING).format(s=schema), {"n": args.pending})  # type: ignore[arg-type]
            conn.execute(sql.SQL("VACUUM ANALYZE {}.jobs").format(schema))
            claim = queries_for(args.schema)["claim"]
            with conn.transaction(force_rollback=True):
                conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                text, order = _positional(conn, claim)
                conn.execute(b"PREPARE claim_plan AS " + text)
                args_sql = ", ".join(LITERALS[name] for name in order)
                for (line,) in conn.execute(
                    f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE claim_plan({args_sql})"
                ):  # type: ignore[arg-type]
                    print(line)
        finally:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))


def _positional(conn: psycopg.Connection[tuple[object, ...]], query: str) -> tuple[bytes, list[str]]:
    """The claim text with psycopg's $n placeholders, and the parameter names in $n order."""
    from psycopg._queries import PostgresQuery

    converted = PostgresQuery(psycopg.adapt.Transformer(conn))
    converted.convert(query, EXAMPLE)  # type: ignore[arg-type]
    return converted.query, list(converted._order or [])


if __name__ == "__main__":
    main()
