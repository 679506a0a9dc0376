#!/usr/bin/env bash
# The web extra's own CI step: install what tests/web needs, then run the HTTP API tests
# (memory, Redis, Postgres), the schemathesis fuzzer, and the browser tests in headless
# Chromium with `browser` required (a missing chromium fails instead of skipping).
#   .ci/browser.sh            (after .ci/run has built .ci-venv and started the services)
# Chromium comes from Debian (about 350 MB); Playwright drives that binary and never
# downloads a browser (`playwright install` is never run).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "chromium"
if ! command -v chromium >/dev/null 2>&1; then
  echo "chromium missing: installing Debian's package"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi
chromium --version

step "python packages"
VENV="${VENV:-.ci-venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# dev pulls the web extra (fastapi, uvicorn) and httpx, schemathesis and playwright.
"$VENV/bin/python" -m pip install -q -e ".[dev]"
export PATH="$PWD/$VENV/bin:$PATH"

export PQUEUE_TEST_REQUIRE="${PQUEUE_TEST_REQUIRE:-redis,postgres},browser"
export PQUEUE_TEST_REDIS_URL="${PQUEUE_TEST_REDIS_URL:-redis://127.0.0.1:6379/3}"
export PQUEUE_TEST_POSTGRES_URL="${PQUEUE_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}"

step "web API and fuzzer"
python -m pytest -q -p no:cacheprovider tests/web -m "not browser"

step "browser"
python -m pytest -q -p no:cacheprovider tests/web -m browser
