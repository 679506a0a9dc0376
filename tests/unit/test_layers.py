"""The package's import layers (ADRs 0136, 0137), read from the source with ``ast``.

- The ground floor keeps its layers: a module imports, when it loads, only from its own
  layer or lower ones. Looking up (a surface's type, a backend) is done inside a function
  or under ``TYPE_CHECKING``, so no import circle can form at load time.
- Generic code never reaches into a backend, at load time or later: a backend hands out
  its parts (``broker.sync_transport()``) and is never looked up by its module's name.

Found, not imported: a circle must fail as a finding. ``if TYPE_CHECKING:`` blocks never
run and are left out.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

_SPEC = importlib.util.find_spec("pqueue")
assert _SPEC is not None and _SPEC.origin is not None
SRC = Path(_SPEC.origin).parent
BACKENDS = ("pqueue.brokers.redis", "pqueue.brokers.postgres", "pqueue.brokers.memory")
OWN_COMMANDS = {"pqueue.cli.migrate", "pqueue.testing.plugin", "pqueue.rsmq.transport"}
"""Generic modules allowed to import a backend: ``pqueue migrate`` is Postgres's own command;
the pytest plugin's ``pqueue_memory_dsn`` drops the memory store it made; RSMQ speaks Redis
only and takes the Redis backend's address and outage rules (ADR 0144)."""

LAYERS: dict[str, tuple[str, ...]] = {
    "foundation": (
        "errors", "clock", "durations", "ids", "extras", "suggest", "steps", "loops", "cancellation",
        "supervisor", "autoscale",
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
        "testing", "autoscaler", "rsmq", "chaos",
    ),
}  # fmt: skip
"""Bottom up. Sub-packages count by their top name; ``brokers`` implements the seam."""

RANK = {name: rank for rank, names in enumerate(LAYERS.values()) for name in names}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST, *, at_load: bool) -> list[ast.AST]:
    """Every node that can run (not under ``if TYPE_CHECKING:``); ``at_load``: only those
    that run when the module loads (not inside a function)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        if at_load and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _imports(path: Path, name: str, *, at_load: bool = False) -> set[str]:
    """The pqueue modules ``path`` (module ``name``) imports (``from a import b`` counts as
    ``a.b`` when ``b`` is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8")), at_load=at_load):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).rstrip(".")
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in out if m == "pqueue" or m.startswith("pqueue.")}


def _load_time_imports(path: Path, name: str) -> set[str]:
    """The ground-floor names (``pqueue.X`` -> ``X``) a module imports when it loads."""
    return {m.split(".")[1] for m in _imports(path, name, at_load=True) if m.count(".")}


# -- the ground floor's layers (ADR 0137) -----------------------------------------------


def _ground_floor() -> list[str]:
    return sorted(p.stem for p in SRC.glob("*.py") if not p.stem.startswith("__"))


def test_every_module_of_the_ground_floor_has_a_layer() -> None:
    missing = [name for name in _ground_floor() if name not in RANK]
    assert not missing, f"give {missing} a layer in LAYERS here (and in ADR 0137's map)"


def test_no_module_imports_up_a_layer_when_it_loads() -> None:
    upward = [
        f"{name} ({_layer(name)}) imports {dep} ({_layer(dep)})"
        for name in _ground_floor()
        for dep in sorted(_load_time_imports(SRC / f"{name}.py", f"pqueue.{name}"))
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
    assert _load_time_imports(module, "pqueue.job") == {"clock", "client"}


def _layer(name: str) -> str:
    return next(layer for layer, names in LAYERS.items() if name in names)


# -- generic code and the backends (ADR 0136) -------------------------------------------


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    return {name: {m for m in _imports(path, name) if m in modules} for name, path in modules.items()}


def _backend(module: str) -> str | None:
    return next((b for b in BACKENDS if module == b or module.startswith(b + ".")), None)


def test_generic_modules_import_no_backend() -> None:
    offenders = {
        (module, target)
        for module, targets in _graph().items()
        if not module.startswith("pqueue.brokers") and module not in OWN_COMMANDS
        for target in targets
        if _backend(target)
    }
    assert offenders == set()


def test_the_sync_transport_layer_imports_no_broker_package() -> None:
    graph = _graph()
    for module in ("pqueue.transport", "pqueue.steps", "pqueue.combine"):
        assert {t for t in graph[module] if t.startswith("pqueue.brokers")} == set(), module


def test_no_import_cycle_joins_a_backend_and_generic_code() -> None:
    graph = _graph()

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for target in graph[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    reached = {module: reach(module) for module in graph}
    cycles = {
        (module, other)
        for module in graph
        if _backend(module)
        for other in reached[module]
        if not other.startswith("pqueue.brokers") and other != "pqueue" and module in reached[other]
    }
    assert cycles == set()


def test_no_module_is_chosen_by_its_module_name() -> None:
    """No generic code holds a backend's module path (docstrings aside): none picks a
    backend by testing ``type(broker).__module__``. The registry (scheme -> "module:Class")
    and the backends themselves live under ``pqueue.brokers``."""
    found = []
    for path in SRC.rglob("*.py"):
        if _module_name(path).startswith("pqueue.brokers"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        found += [
            (path.name, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and any(node.value.startswith(b) for b in BACKENDS)
        ]
    assert found == []
