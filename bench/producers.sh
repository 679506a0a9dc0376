#!/usr/bin/env bash
# One sitting of the producer benchmarks (issue 17), interleaved run by run so every ratio
# compares figures taken within the same minute: single enqueues (sync Client vs huey,
# pgqueuer and the pgbench ceiling of enqueue_one) and 16-way producers (16 threads sharing
# one sync Client, 16 coroutines sharing one AsyncClient, huey from 16 threads, pgqueuer on
# 16 connections), and the C clients' ceilings of pqueue's own single-enqueue script and
# statement (redis-benchmark, pgbench), and the Python drivers' floors of the same call
# (bench/driver_floor.py: redis-py or psycopg sending pre-built calls, no pqueue code).
# PEERS_PY is a Python with the peers installed (the harness's venv).
#
#   PEERS_PY=/path/to/peers-venv/bin/python bench/producers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[[ $PY == /* ]] || PY=$PWD/$PY   # absolute: the harness part runs from the harness's folder
PEERS_PY=${PEERS_PY:?a python with huey and pgqueuer (see /work/shared/bench-peers/README.md)}
N=${N:-20000}
REPEAT=${REPEAT:-3}
one() { "$@" --n "$N" --runs 1; }
for rep in $(seq 1 "$REPEAT"); do
  echo "# rep $rep"
  one $PY bench/producers.py --system sync --backend redis --threads 1
  one $PEERS_PY bench/producers.py --system huey --threads 1
  $PY bench/ceiling_enqueue_redis.py --n "$N" --runs 1
  $PY bench/driver_floor.py --backend redis --n "$N" --runs 1
  one $PY bench/producers.py --system sync --backend redis --threads 16
  one $PEERS_PY bench/producers.py --system huey --threads 16
  one $PY bench/producers.py --system async --backend redis --threads 16
  one $PY bench/producers.py --system sync --backend postgres --threads 1
  one $PEERS_PY bench/producers.py --system pgqueuer --threads 1
  $PY bench/ceiling_enqueue_one.py --seconds 10 --runs 1
  $PY bench/driver_floor.py --backend postgres --n "$((N / 4))" --runs 1
  one $PY bench/producers.py --system sync --backend postgres --threads 16
  one $PEERS_PY bench/producers.py --system pgqueuer --threads 16
  one $PY bench/producers.py --system async --backend postgres --threads 16
done
# The peers' harness itself (single enqueue, one producer): pqueue's adapter calls the sync
# Client; huey and pgqueuer are the references. HARNESS=0 skips this part.
if [[ "${HARNESS:-1}" == 1 ]]; then
  HERE=$(pwd)
  PEERS=${PEERS:-/work/shared/bench-peers}
  for rep in $(seq 1 "$REPEAT"); do
    (cd "$PEERS" && BENCH_ADAPTER_DIRS="$HERE/bench/peers" "$PY" harness.py --adapter pqueue \
       --scenario enqueue_single --n "$N" --repeat 1 2>/dev/null | sed 's/^/redis /')
    (cd "$PEERS" && $PEERS_PY harness.py --adapter huey --scenario enqueue_single --n "$N" --repeat 1 2>/dev/null)
    (cd "$PEERS" && BENCH_PQUEUE_DSN="postgresql://postgres@127.0.0.1:5432/bench_peers?schema=pqueue_bench_sync" \
       BENCH_ADAPTER_DIRS="$HERE/bench/peers" "$PY" harness.py --adapter pqueue \
       --scenario enqueue_single --n "$N" --repeat 1 2>/dev/null | sed 's/^/postgres /')
    (cd "$PEERS" && $PEERS_PY harness.py --adapter pgqueuer --scenario enqueue_single --n "$N" --repeat 1 2>/dev/null)
  done
fi
