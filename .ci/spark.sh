#!/usr/bin/env bash
# CI step for the Spark surface (issue 15): install pqueue[spark] into the CI venv and run
# the tests marked `spark` (deselected from the main run by pyproject's addopts).
# Run after .ci/run (it reuses .ci-venv and the services .ci/run started):
#     .ci/run && .ci/spark.sh
# Cost on the 2-core CI machine: ~40 s to install PySpark the first time (PyPI has only a
# 456 MB sdist; pip builds a wheel and keeps it in its cache, ~/.cache/pip, so later runs on
# the same machine install in seconds), then ~1.5-3 min of tests (one JVM for the session).
set -euo pipefail
cd "$(dirname "$0")/.."

export PQUEUE_TEST_REQUIRE="${PQUEUE_TEST_REQUIRE:-redis,postgres},spark"
export PQUEUE_TEST_REDIS_URL="${PQUEUE_TEST_REDIS_URL:-redis://127.0.0.1:6379/3}"
export PQUEUE_TEST_POSTGRES_URL="${PQUEUE_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}"
export SPARK_LOCAL_IP=127.0.0.1

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "java"
java -version 2>&1 | head -1  # PySpark 4 needs Java 17 or 21 on PATH (or JAVA_HOME)

step "spark venv"
[ -x .ci-venv/bin/python ] || { python3 -m venv .ci-venv && .ci-venv/bin/python -m pip install -q --upgrade pip; }
# No --no-cache-dir: the wheel pip builds from PySpark's sdist is reused from its cache.
.ci-venv/bin/python -m pip install -q -e ".[dev,spark]"
export PATH="$PWD/.ci-venv/bin:$PATH"

step "spark tests"
# A command-line -m replaces the default `-m 'not spark'`.
python -m pytest -q -p no:cacheprovider -m spark tests/spark
