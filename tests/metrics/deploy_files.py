"""deploy/'s files as the tests (and .ci/deploy-check.sh) read them.

Run as a script, it prints the Grafana dashboard's expressions and the KEDA ScaledObject's
query (deploy/k8s/keda) as Prometheus recording rules, so ``promtool check rules`` parses
them: ``python3 tests/metrics/deploy_files.py``.
Only the standard library here: the CI script runs it outside the venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "pqueue.json"
RATE_INTERVAL = "5m"


def dashboard_exprs(rate_interval: str = RATE_INTERVAL) -> dict[str, str]:
    """``panel title / refId`` -> the expression with Grafana's variables filled in
    (``$__rate_interval`` -> ``rate_interval``, ``$queue`` -> every queue)."""
    dashboard = json.loads(DASHBOARD.read_text())
    return {
        f"{panel['title']} / {target['refId']}": target["expr"]
        .replace("$__rate_interval", rate_interval)
        .replace("$queue", ".*")
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    }


def keda_query() -> str:
    """The Prometheus query of deploy/k8s/keda/scaledobject-prometheus.yaml (read without
    a YAML parser: the CI script runs this module outside the venv)."""
    text = (DEPLOY / "k8s" / "keda" / "scaledobject-prometheus.yaml").read_text()
    [line] = [line for line in text.splitlines() if line.strip().startswith("query:")]
    return line.split("query:", 1)[1].strip()


def recording_rules() -> str:
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for n, expr in enumerate(dashboard_exprs().values()):
        lines += [f"      - record: dashboard:expr{n}", f"        expr: {json.dumps(expr)}"]
    lines += ["      - record: keda:worker_jobs", f"        expr: {json.dumps(keda_query())}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(recording_rules())
