"""deploy/ is consistent: the files parse, refer only to files that exist, and promtool accepts them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.metrics.conftest import require_binary
from tests.metrics.deploy_files import DASHBOARD, DEPLOY, dashboard_exprs, recording_rules

ROOT = DEPLOY.parent


def load(name: str) -> Any:
    return yaml.safe_load((DEPLOY / name).read_text())


def test_compose_services_refer_only_to_what_exists() -> None:
    compose = load("docker-compose.yml")
    services: dict[str, Any] = compose["services"]
    assert {"redis", "postgres", "migrate", "worker-1", "worker-2", "prometheus", "grafana"} <= set(services)
    assert "--appendonly" in services["redis"]["command"]
    for name, service in services.items():
        build = service.get("build")
        if build:
            assert (DEPLOY / build["context"] / build["dockerfile"]).is_file(), name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in compose["volumes"], f"{name} uses undeclared volume {source}"
    for worker in ("worker-1", "worker-2"):
        command = services[worker]["command"]
        assert command[0] == "worker" and "--metrics-port" in command
        port = command[command.index("--metrics-port") + 1]
        assert f"127.0.0.1:{port}/healthz" in " ".join(services[worker]["healthcheck"]["test"])
    migrate = services["migrate"]
    assert migrate["command"] == ["migrate"] and migrate["restart"] == "no"


def test_prometheus_scrapes_the_compose_workers_and_loads_the_alerts() -> None:
    config = load("prometheus.yml")
    compose = load("docker-compose.yml")
    for rule_file in config["rule_files"]:
        assert (DEPLOY / rule_file).is_file()
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    }
    for target in targets:
        assert target.split(":")[0] in compose["services"], target
    mounted = {v.split(":")[0] for v in compose["services"]["prometheus"]["volumes"]}
    assert {"./prometheus.yml", "./alerts.yml"} <= mounted
    names = {rule["alert"] for group in load("alerts.yml")["groups"] for rule in group["rules"]}
    assert names == {
        "PqueueQueueGrowing", "PqueueOldestPendingTooOld", "PqueueDeadJobsRising",
        "PqueueFailureRatioHigh", "PqueueNoLiveWorkers", "PqueueWorkerDown",
    }  # fmt: skip


def test_grafana_provisioning_finds_the_dashboard_and_the_datasource() -> None:
    compose = load("docker-compose.yml")
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"] if v.startswith("."))
    datasources = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    [provider] = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/pqueue.yml").read_text())[
        "providers"
    ]
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    [source] = datasources["datasources"]
    assert source["url"] == "http://prometheus:9090"
    dashboard = json.loads(DASHBOARD.read_text())
    uids = {panel["datasource"]["uid"] for panel in dashboard["panels"]}
    assert uids == {source["uid"]}
    exprs = dashboard_exprs()
    assert len(exprs) >= 12 and all("pqueue_" in expr or "up{" in expr for expr in exprs.values())


def test_dockerfile_copies_only_what_exists_and_runs_as_non_root() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    for sources in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.MULTILINE):
        for source in sources.split():
            assert (ROOT / source).exists(), source
    assert re.search(r"^USER 10001", text, re.MULTILINE)
    assert text.count("FROM ") == 2  # multi-stage


@pytest.mark.prometheus
@pytest.mark.parametrize(
    "args",
    [
        ["check", "config", "deploy/prometheus.yml"],
        ["check", "rules", "deploy/alerts.yml"],
        ["test", "rules", "deploy/alerts_test.yml"],
    ],
    ids=["config", "rules", "rule-tests"],
)
def test_promtool_accepts_deploy(args: list[str]) -> None:
    promtool = require_binary("promtool")
    done = subprocess.run(
        [promtool, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.prometheus
def test_promtool_parses_every_dashboard_expression(tmp_path: Path) -> None:
    promtool = require_binary("promtool")
    rules = tmp_path / "dashboard.yml"
    rules.write_text(recording_rules())
    done = subprocess.run(
        [promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
