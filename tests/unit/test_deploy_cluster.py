"""deploy/redis-cluster.yml: six cluster nodes with AOF, joined once with one replica each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "redis-cluster.yml"


def test_six_cluster_nodes_are_joined_three_masters_with_a_replica_each() -> None:
    compose: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    nodes = {name: s for name, s in services.items() if name.startswith("node-")}
    ports = sorted(s["environment"]["PORT"] for s in nodes.values())
    assert ports == [str(p) for p in range(7000, 7006)]
    for service in nodes.values():
        command = " ".join(service["command"])
        assert "--cluster-enabled yes" in command and "--appendonly yes" in command
        assert service["network_mode"] == "host" and "healthcheck" in service
    create = " ".join(services["cluster-create"]["command"])
    assert all(f"127.0.0.1:{p}" in create for p in ports) and "--cluster-replicas 1" in create
    assert set(services["cluster-create"]["depends_on"]) == set(nodes)
    assert {v.split(":")[0] for s in nodes.values() for v in s["volumes"]} <= set(compose["volumes"])
