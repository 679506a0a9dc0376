"""The package's ground floor keeps its layers (ADR 0137): a module imports, when it loads,
only from its own layer or lower ones. Looking up (a surface's type, a backend) is done inside
a function or under ``TYPE_CHECKING``, so no import circle can form at load time."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

_SPEC = importlib.util.find_spec("pqueue")
assert _SPEC is not None and _SPEC.origin is not None
ROOT = Path(_SPEC.origin).parent  # found, not imported: a circle must fail as a finding

LAYERS: dict[str, tuple[str, ...]] = {
    "foundation": (
        "errors", "clock", "durations", "ids", "extras", "suggest", "steps", "loops", "cancellation",
        "supervisor",
    ),
    "model": (
        "job", "spec", "limits", "retry", "priority", "outcome", "task", "options", "periodic", "workflow",
    ),
    "seam": (
        "broker", "broker_control", "broker_flows", "broker_schedules", "middleware", "combine",
        "transport",
    ),
    "backends": ("brokers",),
    "surfaces": (
        "client", "sync", "router", "logs", "otel", "worker", "cli", "web", "metrics", "spark", "demo",
        "testing",
    ),
}  # fmt: skip
"""Bottom up. Sub-packages count by their top name; ``brokers`` implements the seam."""

RANK = {name: rank for rank, names in enumerate(LAYERS.values()) for name in names}


def _load_time_imports(path: Path) -> set[str]:
    """The ``pqueue`` modules (by top name) a module's body imports when it loads."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pqueue":
            parts = node.module.split(".")
            names.update([parts[1]] if len(parts) > 1 else [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("pqueue."))
    return names


def _ground_floor() -> list[str]:
    return sorted(p.stem for p in ROOT.glob("*.py") if not p.stem.startswith("__"))


def test_every_module_of_the_ground_floor_has_a_layer() -> None:
    missing = [name for name in _ground_floor() if name not in RANK]
    assert not missing, f"give {missing} a layer in LAYERS here (and in ADR 0137's map)"


def test_no_module_imports_up_a_layer_when_it_loads() -> None:
    upward = [
        f"{name} ({_layer(name)}) imports {dep} ({_layer(dep)})"
        for name in _ground_floor()
        for dep in sorted(_load_time_imports(ROOT / f"{name}.py"))
        if dep in RANK and name in RANK and RANK[dep] > RANK[name]
    ]
    assert not upward, "import it inside the function that needs it, or move it: " + "; ".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "job.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nfrom pqueue import clock\nfrom pqueue.client import Stats\n"
        "if TYPE_CHECKING:\n    from pqueue.sync import Client\n"
        "def later():\n    from pqueue.worker import Worker\n"
    )
    assert _load_time_imports(module) == {"clock", "client"}


def _layer(name: str) -> str:
    return next(layer for layer, names in LAYERS.items() if name in names)
