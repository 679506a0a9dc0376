#!/usr/bin/env bash
# One benchmark sitting, everything docs/benchmarks.md reports, in one go and one hour:
# the peer comparison (bench/sitting.py: shared harness, peers in their own venv), the
# service ceilings (redis-benchmark, pgbench) and the project's own benches. Every output
# goes to bench/results/<UTC date>/ ; nothing else should run on the machine meanwhile.
#
#   PY=/work/venv-bench-pq/bin/python PEERS_PY=/work/venv-peers/bin/python bench/sitting.sh
#
# PY is a Python with pqueue installed ('.[postgres,bench,uvloop]' plus the harness's
# pinned redis==5.3.1 hiredis==3.5.0, so the harness's recorder costs pqueue what it costs
# the peers); PEERS_PY one with ../shared/bench-peers/requirements.txt plus the same
# uvloop, which pgqueuer's and taskiq's workers take when installed, as pqueue's do (the
# versions step prints whether each side has it). Uses Redis DBs 3
# (own key prefixes) and 8/12 (the harness's), Postgres databases bench_peers (the
# harness's) and pqueue_bench (throw-away schemas), creating the databases if missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-python}
PEERS_PY=${PEERS_PY:?set PEERS_PY to the peers venv python}
PGBASE=${PGBASE:-postgresql://postgres@127.0.0.1:5432}
REDIS=${REDIS:-redis://127.0.0.1:6379/3}
OUT=${OUT:-bench/results/$(date -u +%F)}
mkdir -p "$OUT"
export PATH="$(dirname "$PY"):$PATH"   # `pqueue` and `python` of the measured install

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)" | tee -a "$OUT/log.txt"; }
run() { "$@" 2>&1 | tee -a "$OUT/log.txt"; }
pg_db() {  # create a database once per machine
  psql -XAtq "$PGBASE/postgres" -c "SELECT 1 FROM pg_database WHERE datname = '$1'" | grep -q 1 \
    || psql -XAtq "$PGBASE/postgres" -c "CREATE DATABASE $1"
}
fresh_schema() {  # drop and migrate a throw-away schema of pqueue_bench
  psql -XAtq "$PGBASE/pqueue_bench" -c "DROP SCHEMA IF EXISTS $1 CASCADE" >/dev/null 2>&1
  "$PY" -m pqueue migrate --dsn "$PGBASE/pqueue_bench?schema=$1" >/dev/null
}

pg_db bench_peers
pg_db pqueue_bench
# Bytecode for pqueue as the peers have theirs (pip compiles site-packages; an editable
# install does not): without it every worker process compiles pqueue first, ~60-100 ms
# of CPU each, counted in every drain's start-up.
unset PYTHONDONTWRITEBYTECODE
"$PY" -m compileall -q src bench/peers >/dev/null
step "versions"
run "$PY" -c "import sys, redis, psycopg, pqueue; print('python', sys.version.split()[0], '| pqueue',
pqueue.__version__, '| redis-py', redis.__version__, '| psycopg', psycopg.__version__)"
uvloop_version='import importlib.metadata as m; print(m.version("uvloop"))'
run echo "uvloop: pqueue side $("$PY" -c "$uvloop_version" 2>/dev/null || echo none)," \
  "peers side $("$PEERS_PY" -c "$uvloop_version" 2>/dev/null || echo none)"
run redis-server --version
run psql -XAtq "$PGBASE/postgres" -c "SELECT version()"
run git log -1 --format='commit %h %s'

step "peers and pqueue through the shared harness (N=20000, 3 runs)"
run "$PY" bench/sitting.py --peers-python "$PEERS_PY" --out "$OUT/sitting.jsonl"
run "$PY" bench/report.py "$OUT/sitting.jsonl" --chart "$OUT/benchmarks.png"

step "the harness's own ceiling (its recorder alone) and CPU per job of the Redis drain"
HARNESS=$(cd .. && pwd)/shared/bench-peers; [[ -d $HARNESS ]] || HARNESS=$(cd ../.. && pwd)/shared/bench-peers
run "$PY" bench/recorder_ceiling.py --n 20000 --procs 2 --repeat 3 --loop uvloop --harness "$HARNESS"
for _ in 1 2 3; do
  run "$PEERS_PY" bench/cpu_per_job.py --adapter huey --n 20000 --procs 2 --harness "$HARNESS"
  BENCH_ADAPTER_DIRS=$PWD/bench/peers BENCH_PQUEUE_DSN=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/8} \
    run "$PY" bench/cpu_per_job.py --adapter pqueue --n 20000 --procs 2 --harness "$HARNESS"
done

step "Redis ceilings and broker"
run "$PY" bench/ceilings_redis.py --url "$REDIS" --repeat 3

step "Postgres ceilings and broker, 1M completed jobs"
PGURL="$PGBASE/pqueue_bench" BROKER=1 REPEAT=3 PYTHON="$PY" run bench/ceilings_postgres.sh

step "history: claim + ack with 5,000,000 retained completed jobs against an empty table"
run "$PY" bench/retention_postgres.py --dsn "$PGBASE/pqueue_bench" --retained 5000000 --n 20000 --repeat 3

step "memory broker and worker"
run "$PY" bench/broker.py --dsn memory://bench --n 20000 --repeat 3
run "$PY" bench/worker.py --dsn memory://bench --n 50000 --repeat 3

step "pick-up latency without the harness's recorder"
run "$PY" bench/latency.py --dsn memory://lat
run "$PY" bench/latency.py --dsn "$REDIS?prefix=pqlat"
fresh_schema pqlat
run "$PY" bench/latency.py --dsn "$PGBASE/pqueue_bench?schema=pqlat"

step "footprint of 100,000 pending jobs"
run "$PY" bench/footprint.py --dsn memory://footprint
run "$PY" bench/footprint.py --dsn "$REDIS?prefix=pqfoot"
fresh_schema pqfoot
run "$PY" bench/footprint.py --dsn "$PGBASE/pqueue_bench?schema=pqfoot"

step "reliability: SIGKILLs mid-run"
run "$PY" bench/reliability.py --dsn "$REDIS?prefix=pqrel" --jobs 1000 --kills 5
fresh_schema pqrel
run "$PY" bench/reliability.py --dsn "$PGBASE/pqueue_bench?schema=pqrel" --jobs 1000 --kills 5

step "done: $OUT"
