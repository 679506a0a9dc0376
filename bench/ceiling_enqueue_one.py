"""pgbench ceiling of pqueue's own single-enqueue statement (``enqueue_one``), one client.

Renders the ``enqueue_one`` query of a fresh schema with literal values in place of its
parameters (a time-ordered id made on the server, like pqueue's UUIDv7), runs it with
``pgbench -M prepared -c 1`` for ``--seconds``, ``--runs`` times, and prints each run's
statements (jobs) per second: what one client could do with no Python at all.

    python bench/ceiling_enqueue_one.py --dsn postgresql://postgres@127.0.0.1:5432/pqueue_bench
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile

import psycopg

from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.sql import queries_for

SCHEMA = "ceiling_one"
TIME_ORDERED_ID = (
    "encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send("
    "(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid"
)
LITERALS = {
    "id": TIME_ORDERED_ID,
    "queue": "'bench'",
    "type": "'bench.noop'",  # no ':' (pgbench would read ':noop' as a variable)
    "payload": "'1763912345.123456'",
    "at_epoch": "NULL",
    "delay": "NULL",
    "now": "NULL",
    "max_retries": "3",
    "max_recoveries": "5",
    "timeout": "NULL",
    "idempotency_key": "NULL",
    "meta": "'{}'",
    "handoff": "true",
}


def script() -> str:
    text = queries_for(SCHEMA)["enqueue_one"]
    text = re.sub(r"%\((\w+)\)s", lambda m: LITERALS[m[1]], text)
    return " ".join(line for line in text.splitlines() if not line.lstrip().startswith("--")) + ";\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/pqueue_bench")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    migrate(f"{args.dsn}?schema={SCHEMA}")
    rates = []
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".sql") as file:
            file.write(script())
            file.flush()
            for _ in range(args.runs):
                out = subprocess.run(
                    ["pgbench", "-n", "-M", "prepared", "-c", "1", "-j", "1", "-T", str(args.seconds),
                     "-f", file.name, args.dsn],
                    check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                rates.append(float(re.search(r"^tps = ([\d.]+)", out, re.MULTILINE)[1]))  # type: ignore[index]
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    print(
        f"pgbench enqueue_one, 1 client: {', '.join(f'{r:,.0f}' for r in rates)} jobs/s; "
        f"median {statistics.median(rates):,.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
