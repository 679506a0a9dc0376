#!/usr/bin/env bash
# Check deploy/ offline: Prometheus config and alert rules (promtool check + the rules'
# unit tests), every Grafana dashboard expression parsed by promtool, and the compose
# file (when docker-compose is installed). Installs Debian's prometheus package (which
# ships promtool) when promtool is missing and we are root with apt-get (.ci/apt-install),
# then stops and disables the service the package enables, so nothing is left running.
#   .ci/deploy-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    # A developer's machine without root or apt: say what is missing; CI (root) installs it.
    if [[ ",${PQUEUE_TEST_REQUIRE:-}," == *",prometheus,"* ]]; then
      echo "promtool missing and cannot be installed here (needs root and apt-get)" >&2
      exit 1
    fi
    echo "SKIPPED deploy checks: promtool missing (apt-get install prometheus, as root)" >&2
    exit 0
  fi
  # promtool comes with the Prometheus server, whose service the package enables: stop it.
  bash .ci/apt-install --no-service prometheus prometheus
fi

promtool check config deploy/prometheus.yml
promtool check rules deploy/alerts.yml
promtool test rules deploy/alerts_test.yml

# Dashboard expressions: each becomes a recording rule (Grafana's variables replaced by
# what they stand for) so promtool parses it like any rule.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 tests/metrics/deploy_files.py > "$tmp/dashboard-rules.yml"
promtool check rules "$tmp/dashboard-rules.yml"

if command -v docker-compose >/dev/null 2>&1; then
  docker-compose -f deploy/docker-compose.yml config -q && echo "deploy/docker-compose.yml: valid"
else
  echo "docker-compose not installed: compose file checked by tests/metrics/test_deploy.py only"
fi
