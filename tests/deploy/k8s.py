"""Offline validation of deploy/k8s: every manifest against the Kubernetes schemas
(``kubernetes-validate``, strict: an unknown field is an error) and KEDA's ScaledObjects
against the CRD kept in deploy/k8s/schemas (made strict the same way).

No cluster is needed (``kubectl --dry-run=server`` would need one). Run by hand:
``python -m tests.deploy.k8s`` prints one line per resource and exits 1 on any error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KUBERNETES_VERSION = "1.33"
KEDA_CRD = K8S / "schemas" / "keda.sh_scaledobjects.yaml"

Resource = dict[str, Any]


def manifest_files() -> list[Path]:
    """Every manifest under deploy/k8s (not the kustomization, not the vendored schemas)."""
    return sorted(
        p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml" and "schemas" not in p.parts
    )


def resources(path: Path) -> Iterator[Resource]:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            yield doc


def _strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its
    properties (what the API server prunes silently, a typo, becomes an error)."""
    if isinstance(schema, dict):
        out = {key: _strict(value) for key, value in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


@cache
def keda_schema(api_version: str, kind: str) -> Any:
    crd = yaml.safe_load(KEDA_CRD.read_text())
    assert crd["spec"]["names"]["kind"] == kind, f"no CRD kept for {kind}"
    group = crd["spec"]["group"]
    for version in crd["spec"]["versions"]:
        if f"{group}/{version['name']}" == api_version:
            return _strict(version["schema"]["openAPIV3Schema"])
    raise LookupError(f"{api_version} {kind}: not in {KEDA_CRD.name}")


def validate(resource: Resource) -> None:
    """Raise (a jsonschema or kubernetes-validate error) when ``resource`` breaks its schema."""
    if resource["apiVersion"].startswith("keda.sh/"):
        jsonschema.Draft7Validator(keda_schema(resource["apiVersion"], resource["kind"])).validate(resource)
    else:
        kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)


def problems() -> list[str]:
    """One line per resource that fails validation ([] when all pass)."""
    found = []
    for path in manifest_files():
        for resource in resources(path):
            try:
                validate(resource)
            except Exception as exc:  # noqa: BLE001 - reported, one line per resource
                found.append(f"{path.relative_to(K8S)} {resource.get('kind')}: {str(exc).splitlines()[0]}")
    return found


if __name__ == "__main__":
    errors = problems()
    for line in errors:
        print(line)
    print(f"{len(manifest_files())} files under deploy/k8s: {'INVALID' if errors else 'valid'}")
    sys.exit(1 if errors else 0)
