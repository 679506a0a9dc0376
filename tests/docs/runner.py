"""Run one Markdown page's code blocks in order, the way a reader would (ADR 0070).

A page runs in its own working directory: file blocks (``# myapp/tasks.py``) are written
there and importable; its python blocks share one namespace, as if typed into one Python
shell (a block with a top-level ``await`` runs in ``asyncio.run``); its bash blocks run in
``bash -euo pipefail`` in that directory, with this interpreter's ``bin`` first on
``PATH``. Every DSN in a block is rewritten to the test's own namespace before it runs:
``redis://…`` to a fresh key prefix, ``postgresql://…`` to a fresh schema (already
migrated), ``memory://name`` to a store of its own; a block's other query parameters
(``retention=…``) are kept. A relative ``sqlite:///file.db`` needs no rewriting: it names a
file in the page's own working directory. Shared keys, schemas and stores are never touched, and
:meth:`PageRun.close` removes what the page made.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import importlib
import inspect
import io
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tests.docs.fences import Block

BASH_TIMEOUT = 120.0
"""Seconds a bash block may take; a worker in a doc block must stop by itself well before."""

_DSN = re.compile(r"\b(?P<scheme>rediss?(?:\+cluster)?|postgres(?:ql)?|memory)://(?P<rest>[^\s'\"`)\]]*)")
_NAMESPACE_KEYS = {"prefix", "schema"}
_CHECKER = doctest.OutputChecker()
_CHECK_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _service(scheme: str) -> str | None:
    """The test service behind a DSN scheme: ``redis``, ``redis_cluster``, ``postgres``, or
    None for memory."""
    if scheme.endswith("+cluster"):
        return "redis_cluster"
    return "redis" if scheme.startswith("redis") else "postgres" if scheme.startswith("postgres") else None


_SPARK = re.compile(r"\b(?:pyspark|pyarrow|pqueue\.spark)\b|format\(\"pqueue\"\)")


def needs_spark(blocks: list[Block]) -> bool:
    """Whether the runnable blocks use PySpark, pyarrow or the data source: such a page is
    marked ``spark`` and runs in the Spark step, where those packages are installed."""
    return any(_SPARK.search(block.code) for block in blocks)


def services(blocks: list[Block]) -> set[str]:
    """The services (``redis``, ``postgres``) the runnable blocks name in a DSN."""
    named = {_service(m["scheme"]) for block in blocks for m in _DSN.finditer(block.code)}
    return {service for service in named if service is not None}


class PageRun:
    """The state of one page's run: its directory, namespace, environment and DSNs."""

    def __init__(self, workdir: Path, dsns: dict[str, str], namespace: str) -> None:
        """``dsns`` maps ``redis``/``postgres`` to the test's namespaced DSN for that service."""
        self.workdir = workdir
        self.dsns = dsns
        self.namespace = namespace
        self.memory_stores: set[str] = set()
        self.globals: dict[str, Any] = {"__name__": "__doc__"}
        self.env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(workdir), os.environ.get("PYTHONPATH")) if p),
            "PQUEUE_LOG_LEVEL": os.environ.get("PQUEUE_LOG_LEVEL", "WARNING"),
        }
        self.env.pop("PQUEUE_DSN", None)
        sys.path.insert(0, str(workdir))

    # -- DSNs -------------------------------------------------------------------------

    def rewrite(self, code: str) -> str:
        """``code`` with every DSN pointed at this run's namespace."""
        return _DSN.sub(lambda m: self._dsn(m["scheme"], m["rest"]), code)

    def _dsn(self, scheme: str, rest: str) -> str:
        service = _service(scheme)
        if service is None:  # memory://name: a store of this run's own
            parts = urlsplit(f"memory://{rest}")
            store = f"{self.namespace}-{parts.netloc or 'default'}"
            self.memory_stores.add(store)
            return urlunsplit(parts._replace(netloc=store))
        base = self.dsns[service]
        extra = [(k, v) for k, v in parse_qsl(urlsplit(f"x://{rest}").query) if k not in _NAMESPACE_KEYS]
        if not extra:
            return base
        parts = urlsplit(base)
        return urlunsplit(parts._replace(query="&".join(q for q in (parts.query, urlencode(extra)) if q)))

    # -- running ----------------------------------------------------------------------

    def run(self, block: Block) -> None:
        """Write, execute or shell ``block``; an error names the block's page and line."""
        code = self.rewrite(block.code)
        if block.file is not None:
            self._write(block.file, code, block)
            printed = ""
        elif block.language == "python":
            printed = self._python(code, block)
        else:
            printed = self._bash(code, block)
        if block.output is not None and not _CHECKER.check_output(block.output, printed, _CHECK_FLAGS):
            raise AssertionError(
                f"{block.where}: the output differs from the ```output block that follows it\n"
                f"expected:\n{block.output}\ngot:\n{printed}"
            )

    def _write(self, relative: str, code: str, block: Block) -> None:
        compile(code, block.where, "exec")  # a syntax error fails here, at the block
        target = self.workdir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, encoding="utf-8")
        importlib.invalidate_caches()

    def _python(self, code: str, block: Block) -> str:
        compiled = _compile(code, block)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.chdir(self.workdir):
            if compiled.co_flags & inspect.CO_COROUTINE:  # a top-level await: eval gives a coroutine
                asyncio.run(eval(compiled, self.globals))  # the docs' own code
            else:
                exec(compiled, self.globals)  # the docs' own code
        sys.stdout.write(out.getvalue())
        return out.getvalue()

    def _bash(self, code: str, block: Block) -> str:
        try:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=BASH_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{block.where}: still running after {BASH_TIMEOUT:.0f} s") from exc
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        if done.returncode != 0:
            raise AssertionError(
                f"{block.where}: exit code {done.returncode}\n{code}\n"
                f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            )
        return done.stdout

    # -- cleaning up ------------------------------------------------------------------

    def close(self, cleanup: Callable[[str], None]) -> None:
        """Close what the page left open, forget its modules, and remove its data.

        ``cleanup(service)`` removes the namespace on a service (``redis``/``postgres``).
        """
        from pqueue import Client, Router

        for value in list(self.globals.values()):
            if isinstance(value, Client | Router):  # a Router closes the client it made itself
                value.close()
        self.globals.clear()
        _forget_modules(self.workdir)
        with contextlib.suppress(ValueError):
            sys.path.remove(str(self.workdir))
        from pqueue.brokers.memory import drop_store

        for store in self.memory_stores:
            drop_store(store)
        for service in self.dsns:
            cleanup(service)


def _compile(code: str, block: Block) -> CodeType:
    compiled: CodeType = compile(
        code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    return compiled


def _forget_modules(workdir: Path) -> None:
    """Drop every imported module that came from ``workdir``, so the next page's
    ``myapp.tasks`` is its own and not this page's."""
    root = str(workdir)
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None) or ""
        paths = list(getattr(module, "__path__", []) or [])
        if origin.startswith(root) or any(str(p).startswith(root) for p in paths):
            del sys.modules[name]
    importlib.invalidate_caches()
