"""What the browser test needs: Debian's chromium, Playwright's Python package, and a
``pqueue serve`` process of its own on a free loopback port.

Missing chromium or playwright skips the test loudly, or fails it when
``PQUEUE_TEST_REQUIRE`` names ``browser`` (`make browser` installs chromium; `dev` has playwright).
Playwright never downloads a browser here: it drives the chromium binary it is given.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import httpx
import pytest

from tests import services
from tests.ports import free_port

INSTALL = "apt-get install -y chromium; pip install playwright (never `playwright install`)"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
]


def chromium_path() -> str:
    """The chromium binary (``PQUEUE_CHROMIUM`` or ``chromium`` on PATH); skip or fail if absent."""
    problem = None
    path = os.environ.get("PQUEUE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        problem = "chromium is not installed"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "the playwright package is not installed"
    if problem is None and path is not None:
        return path
    if "browser" in services.required():
        pytest.fail(f"PQUEUE_TEST_REQUIRE names browser, but {problem} ({INSTALL})", pytrace=False)
    pytest.skip(f"SKIPPED BROWSER TEST: {problem} ({INSTALL})")


@contextmanager
def serving(
    dsn: str, env: dict[str, str], *, ready_path: str = "readyz", extra: Sequence[str] = ()
) -> Iterator[str]:
    """``pqueue serve`` (with ``extra`` flags) on a free loopback port until the block ends;
    yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "pqueue", "serve", "--dsn", dsn, "--port", str(port), *extra]
    process = subprocess.Popen(command, env={**os.environ, **env})
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"pqueue serve exited with {process.returncode}")
            try:
                if httpx.get(url + ready_path, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("pqueue serve did not become ready in 30 s")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
