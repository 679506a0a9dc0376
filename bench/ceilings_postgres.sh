#!/usr/bin/env bash
# Postgres ceilings for pqueue's broker pattern, measured by pgbench (C client, no Python):
# the same table, indexes and statements the broker runs (ceilings_postgres/*.sql), with
# COMPLETED completed jobs in the table. With BROKER=1 it then runs bench/broker.py against
# another schema of the same database with the same background, so both sets of numbers
# come from one sitting. Each background is vacuumed after it is written, as autovacuum
# would do (this machine's server runs with autovacuum off; see docs/postgres.md).
#
#   PGURL=postgresql://postgres@127.0.0.1:5432/pqueue_bench BROKER=1 bench/ceilings_postgres.sh
#
# Works only in its own schemas ("ceiling", "bench_broker") of PGURL's database, which it
# drops and re-creates; use a database of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgresql://postgres@127.0.0.1:5432/pqueue_bench}
COMPLETED=${COMPLETED:-1000000}
SECONDS_PER=${SECONDS_PER:-10}
REPEAT=${REPEAT:-3}
PY=${PYTHON:-python}
D=bench/ceilings_postgres

sql() { PGOPTIONS="-c client_min_messages=warning" psql -XAtq -v ON_ERROR_STOP=1 "$PGURL" "$@"; }
tps() {  # pgbench's tps, or its whole output and a failure
  local out
  out=$(pgbench -n -M prepared -c 1 -j 1 "$@" "$PGURL" 2>&1) || { echo "$out" >&2; return 1; }
  awk '/^tps/ {print $3}' <<<"$out"
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
completed() { sql -c "SELECT count(*) FROM ceiling.jobs WHERE status = 'completed'"; }

echo "# $(date -u +%FT%TZ) $(sql -c 'SHOW server_version') fsync=$(sql -c 'SHOW fsync')" \
     "synchronous_commit=$(sql -c 'SHOW synchronous_commit') completed=$COMPLETED T=${SECONDS_PER}s"
sql -c "DROP SCHEMA IF EXISTS ceiling CASCADE"
$PY -m pqueue migrate --dsn "$PGURL?schema=ceiling" >/dev/null
sql -v schema=ceiling -v completed="$COMPLETED" -f $D/fill.sql

one=(); many=(); claim=(); prune=()
for rep in $(seq 1 "$REPEAT"); do
  one+=("$(tps -T "$SECONDS_PER" -D batch=1 -f $D/enqueue.sql)")
  t=$(tps -T "$SECONDS_PER" -D batch=1000 -f $D/enqueue.sql)
  many+=("$(awk -v t="$t" 'BEGIN {printf "%.0f", t * 1000}')")
  before=$(completed)
  tps -T "$SECONDS_PER" -D claim=100 -f $D/claim_ack.sql >/dev/null
  claim+=("$(( ($(completed) - before) / SECONDS_PER ))")
  t=$(tps -t 100 -f $D/prune.sql)
  prune+=("$(awk -v t="$t" 'BEGIN {printf "%.0f", t * 1000}')")
  sql -v schema=ceiling -v completed=100000 -f $D/fill.sql   # put back what prune took
  echo "rep $rep: enqueue_one ${one[-1]} | enqueue_many ${many[-1]} | claim_ack ${claim[-1]} | prune ${prune[-1]} jobs/s"
done
echo "pgbench median jobs/s: enqueue_one $(median "${one[@]}") | enqueue_many(1000) $(median "${many[@]}")" \
     "| claim_ack(100) $(median "${claim[@]}") | prune(1000) $(median "${prune[@]}")"
sql -c "DROP SCHEMA ceiling CASCADE"

if [[ "${BROKER:-0}" == 1 ]]; then
  sql -c "DROP SCHEMA IF EXISTS bench_broker CASCADE"
  $PY -m pqueue migrate --dsn "$PGURL?schema=bench_broker" >/dev/null
  # The same background as the ceilings: COMPLETED completed jobs, vacuumed.
  sql -v schema=bench_broker -v completed="$COMPLETED" -f $D/fill.sql
  $PY bench/broker.py --dsn "$PGURL?schema=bench_broker" --n 20000 --n-one 5000 --repeat "$REPEAT" --keep
  sql -c "DROP SCHEMA bench_broker CASCADE"
fi
