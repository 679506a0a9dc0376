"""deploy/k8s: every manifest validates offline against the Kubernetes and KEDA schemas (and a
broken one does not), the pieces agree with one another (grace period above the shutdown
timeout, probes, selectors, thresholds), and the KEDA scalers' SQL and Redis keys count the
due jobs of a real pqueue broker."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis.asyncio as aioredis

import pqueue
from pqueue import AsyncClient, Task
from pqueue.job import JobStatus
from tests.conftest import only_backends
from tests.deploy.k8s import K8S, manifest_files, problems, resources, validate

Resource = dict[str, Any]


def load(name: str) -> list[Resource]:
    return list(resources(K8S / name))


def kind(name: str, wanted: str) -> Resource:
    [found] = [r for r in load(name) if r["kind"] == wanted]
    return found


def env(container: Resource) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def trigger(name: str) -> list[Resource]:
    return list(kind(f"keda/{name}", "ScaledObject")["spec"]["triggers"])


def test_every_manifest_validates_against_its_schema() -> None:
    assert len(manifest_files()) >= 7
    assert problems() == []


@pytest.mark.parametrize(
    ("name", "break_it", "error"),
    [
        ("worker.yaml", lambda r: r["spec"].__setitem__("replicas", "two"), "is not of type"),
        (
            "worker.yaml",
            lambda r: r["spec"]["template"]["spec"].__setitem__("terminationGracePeriod", 45),
            "terminationGracePeriod",
        ),
        (
            "keda/scaledobject-prometheus.yaml",
            lambda r: r["spec"].__setitem__("minReplicaCont", 1),
            "minReplicaCont",
        ),
        ("keda/scaledobject-postgres.yaml", lambda r: r["spec"].pop("scaleTargetRef"), "scaleTargetRef"),
    ],
)
def test_a_broken_manifest_fails_validation(name: str, break_it: Any, error: str) -> None:
    resource = copy.deepcopy(load(name)[0])
    validate(resource)
    break_it(resource)
    with pytest.raises(Exception, match=error):
        validate(resource)


def test_the_kustomization_lists_every_manifest_and_one_scaled_object() -> None:
    import yaml

    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    assert all((K8S / path).is_file() for path in listed)
    rest = {str(p.relative_to(K8S)) for p in manifest_files() if "keda" not in p.parts}
    assert rest <= set(listed)
    assert len([p for p in listed if p.startswith("keda/")]) == 1, (
        "two ScaledObjects would fight over replicas"
    )


def test_a_scale_down_drains_within_the_grace_period() -> None:
    pod = kind("worker.yaml", "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["terminationGracePeriodSeconds"] > float(env(container)["PQUEUE_SHUTDOWN_TIMEOUT"])


@pytest.mark.parametrize("name", ["worker.yaml", "serve.yaml"])
def test_probes_and_selectors(name: str) -> None:
    deployment = kind(name, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    budgets = [
        b for b in load("disruption-budgets.yaml") if b["metadata"]["name"] == deployment["metadata"]["name"]
    ]
    assert [b["spec"]["selector"]["matchLabels"].items() <= labels.items() for b in budgets] == [True]
    if name == "serve.yaml":
        assert kind(name, "Service")["spec"]["selector"].items() <= labels.items()


@pytest.mark.parametrize("name", ["prometheus", "postgres", "redis"])
def test_each_scaled_object_targets_the_workers_at_their_concurrency_and_queues(name: str) -> None:
    scaled = kind(f"keda/scaledobject-{name}.yaml", "ScaledObject")
    worker = kind("worker.yaml", "Deployment")
    assert scaled["spec"]["scaleTargetRef"]["name"] == worker["metadata"]["name"]
    [container] = worker["spec"]["template"]["spec"]["containers"]
    variables = env(container)
    queues = {q.split(":")[0] for q in variables["PQUEUE_QUEUES"].split(",")}
    for each in scaled["spec"]["triggers"]:
        meta = each["metadata"]
        target = meta.get("threshold") or meta.get("targetQueryValue") or meta.get("listLength")
        assert target == variables["PQUEUE_CONCURRENCY"]
        for key, value in meta.items():
            if key.endswith("FromEnv"):
                assert value in variables, f"{key}: {value} is not in the worker's environment"
    text = str(scaled["spec"]["triggers"])
    assert {q for q in queues if q in text} == queues


@only_backends("postgres")
async def test_the_postgres_scaler_query_counts_due_and_running_jobs(
    backend_dsn: str, namespace: str, pqueue_open_broker: object
) -> None:
    [scaler] = trigger("scaledobject-postgres.yaml")
    sql = scaler["metadata"]["query"]
    assert "FROM pqueue.jobs" in sql
    expected = await _due_and_running(backend_dsn)
    url = backend_dsn.split("?", maxsplit=1)[0]
    async with await psycopg.AsyncConnection.connect(url) as conn:
        row = await (
            await conn.execute(sql.replace("FROM pqueue.jobs", f'FROM "{namespace}".jobs'))
        ).fetchone()
    assert row is not None and row[0] == expected == 4


@only_backends("redis")
async def test_the_redis_scaler_keys_are_the_pending_lists(
    backend_dsn: str, namespace: str, pqueue_open_broker: object
) -> None:
    await _due_and_running(backend_dsn)
    async with AsyncClient(backend_dsn) as client:
        stats = await client.stats()
    url = backend_dsn.split("?", maxsplit=1)[0]
    conn = aioredis.from_url(url)
    try:
        for each in trigger("scaledobject-redis.yaml"):
            key = re.sub(r"^pqueue:", f"{namespace}:", each["metadata"]["listName"])
            queue = key.split("{")[1].split("}")[0]
            assert (await conn.type(key)) in (b"list", b"none")  # what KEDA's scaler reads with LLEN
            assert await conn.llen(key) == stats.total(JobStatus.PENDING, queue), key
        assert await conn.llen(f"{namespace}:{{default}}:pending") == 2
    finally:
        await conn.aclose()


async def _due_and_running(dsn: str) -> int:
    """3 due jobs on ``default`` (one claimed: running), 1 on ``critical``, 2 not due yet and
    1 on a queue the workers do not serve: 4 want a slot."""
    async with AsyncClient(dsn) as client:
        await client.enqueue_many([Task("k8s:job", i) for i in range(3)])
        await client.enqueue("k8s:job", queue="critical")
        await client.enqueue_many([Task("k8s:job", i, delay=3600) for i in range(2)])
        await client.enqueue("k8s:job", queue="elsewhere")
    broker = pqueue.connect(dsn)
    await broker.open()
    try:
        assert len(await broker.claim(["default"], worker_id="k8s-test", limit=1, lease_for=60)) == 1
    finally:
        await broker.close()
    return 4


def test_the_vendored_crd_is_keda_s(tmp_path: Path) -> None:
    text = (K8S / "schemas" / "keda.sh_scaledobjects.yaml").read_text()
    assert "kedacore/keda v2.20.2" in text and "name: scaledobjects.keda.sh" in text


def test_the_kustomization_renders_manifests_that_validate() -> None:
    import shutil
    import subprocess

    import yaml

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the kustomization's files are validated one by one above")
    done = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    rendered = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    for resource in rendered:
        validate(resource)
        assert resource["metadata"]["labels"]["app.kubernetes.io/part-of"] == "pqueue"
    assert sorted(r["kind"] for r in rendered) == sorted(
        [
            "Secret",
            "Deployment",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "PodDisruptionBudget",
            "ScaledObject",
        ]
    )
    images = {
        c["image"]
        for r in rendered
        if r["kind"] == "Deployment"
        for c in r["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"registry.example.com/pqueue-shopapp:1.0"}


@pytest.mark.parametrize("name", ["worker.yaml", "serve.yaml"])
def test_the_containers_commands_and_variables_are_pqueue_s(name: str) -> None:
    """The arguments parse with the real CLI, and every PQUEUE_* variable is one a flag of
    that command reads (a typo would be ignored silently in a cluster)."""
    from pqueue.cli import build_parser
    from pqueue.cli._options import env_name

    [container] = kind(name, "Deployment")["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    parser = build_parser()._subparsers._group_actions[0].choices[container["args"][0]]  # type: ignore[union-attr]
    known = {
        env_name(flag)
        for action in parser._actions
        for flag in action.option_strings
        if flag.startswith("--")
    }
    known |= {"PQUEUE_ROUTER", "PQUEUE_METRICS_TOKEN", "PQUEUE_API_TOKEN", "PQUEUE_LOG_FORMAT"}
    used = {v for v in env(container) if v.startswith("PQUEUE_") and not v.startswith("PQUEUE_KEDA_")}
    assert used <= known, used - known
    assert args.command == container["args"][0]
