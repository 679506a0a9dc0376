"""Each app in examples/ runs end to end by itself, as its README says, on every backend.

``python -m examples.<name> --dsn <this test's namespace>`` from the repo root: it
enqueues, runs a worker until its jobs end, prints the outcome and exits 0 only if every
job ended as the example promises (its last line then starts with ``OK:``).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import service_url

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir() if (p / "__main__.py").is_file())


def test_every_example_is_found_and_has_a_readme() -> None:
    assert {"email", "thumbnails", "web_producer"} <= set(EXAMPLES)
    for name in EXAMPLES:
        assert (ROOT / "examples" / name / "README.md").is_file(), name


@pytest.mark.parametrize("example", EXAMPLES)
async def test_example_runs_end_to_end(
    example: str, backend: ModuleType, backend_dsn: str, namespace: str
) -> None:
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", f"examples.{example}", "--dsn", backend_dsn],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        await backend.cleanup(service_url(backend.SERVICE), namespace)
    assert done.returncode == 0, (
        f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    assert done.stdout.strip().splitlines()[-1].startswith("OK:"), done.stdout
