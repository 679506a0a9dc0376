"""The package's import layers: generic code never reaches into a backend (ADR 0136).

Read from the source with ``ast`` (every import a module can run, at its top or inside a
function; ``if TYPE_CHECKING:`` blocks are left out, they never run). A backend reaches
the generic code by handing out its parts (``broker.sync_transport()``), never by being
looked up by its module's name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pqueue

SRC = Path(pqueue.__file__).parent
BACKENDS = ("pqueue.brokers.redis", "pqueue.brokers.postgres", "pqueue.brokers.memory")
OWN_COMMANDS = {"pqueue.cli.migrate"}
"""Generic modules allowed to import a backend: ``pqueue migrate`` is Postgres's own command."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _imports(path: Path, name: str) -> set[str]:
    """The pqueue modules ``path`` imports at run time (``from a import b`` counts as
    ``a.b`` when ``b`` is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
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
