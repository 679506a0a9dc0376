"""The reference Node RSMQ client (npm ``rsmq``), for the interop tests.

``rsmq`` is installed with npm once into a cache folder (``PQUEUE_NPM_CACHE``, default
``~/.cache/pqueue-tests/npm``), under a file lock so parallel test workers install it once.
A missing node or npm skips loudly, or fails when ``PQUEUE_TEST_REQUIRE`` names ``node``
(CI: ``.ci/node`` installs them first). :class:`NodeRsmq` runs one ``node`` process per
test and sends it one JSON request per call (``rsmq_driver.js``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import missing

RSMQ_VERSION = "0.12.4"
DRIVER = Path(__file__).with_name("rsmq_driver.js")


def cache_dir() -> Path:
    root = os.environ.get("PQUEUE_NPM_CACHE") or str(Path.home() / ".cache" / "pqueue-tests" / "npm")
    return Path(root) / f"rsmq-{RSMQ_VERSION}"


def install_rsmq() -> Path:
    """The ``node_modules`` folder holding ``rsmq`` (installed on first use)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing("node", "SKIPPED RSMQ NODE INTEROP: node and npm are not installed (.ci/node installs them)")
    folder = cache_dir()
    modules = folder / "node_modules"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (modules / "rsmq" / "package.json").exists():
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(folder),
                 f"rsmq@{RSMQ_VERSION}"],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                missing("node", f"npm install rsmq@{RSMQ_VERSION} failed: {done.stderr.strip()[-500:]}")
    return modules


class NodeRsmqError(Exception):
    """An error the Node client reported: ``name`` is RSMQ's error name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


class NodeRsmq:
    """One ``node`` process running the reference client on ``redis_url`` and ``ns``."""

    def __init__(self, redis_url: str, ns: str, *, realtime: bool = False) -> None:
        modules = install_rsmq()
        parts = urlsplit(redis_url)
        db = (parts.path or "/0").strip("/") or "0"
        self.proc = subprocess.Popen(
            ["node", str(DRIVER), parts.hostname or "127.0.0.1", str(parts.port or 6379), db, ns,
             "realtime" if realtime else "plain"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8",
            env={**os.environ, "NODE_PATH": str(modules)},
        )  # fmt: skip

    def call(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the node driver exited"
        reply = json.loads(line)
        if "err" in reply:
            raise NodeRsmqError(reply["err"]["name"], reply["err"]["message"])
        return reply["ok"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
