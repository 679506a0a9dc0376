"""The README's and docs/*.md's python and bash blocks run, page by page (ADR 0070).

One test per page that has runnable blocks, marked with the services its DSNs name
(``-m redis`` selects the pages that need Redis), and ``spark`` when a block uses PySpark
(such a page runs in the Spark step, ``make spark``). A page's blocks run in order in one
working directory and one Python namespace (:mod:`tests.docs.runner`), on the test's own
key prefix / schema / memory store. New pages under docs/ are picked up by themselves, and
every fence of every page either runs or says why not (``<!-- notest: reason -->``).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from tests.backends import available
from tests.conftest import service_url
from tests.docs.fences import runnable, unaccounted
from tests.docs.runner import PageRun, needs_spark, services
from tests.services import require_spark

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BACKENDS = available()


def page_params(pages: list[Path], root: Path) -> list[object]:
    """One ``pytest.param`` per page with runnable blocks, marked with the services they
    name and ``spark`` when they use PySpark, pyarrow or the data source."""
    params: list[object] = []
    for page in pages:
        blocks = runnable(page)
        if blocks:
            marks = [getattr(pytest.mark, s) for s in sorted(services(blocks))]
            if needs_spark(blocks):
                marks.append(pytest.mark.spark)
            params.append(pytest.param(page, id=str(page.relative_to(root)), marks=marks))
    return params


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_fence_runs_or_says_why_not(page: Path) -> None:
    """A fence the suite skips must say why; docs/spark.md had eight unexplained ones, and
    the name they hid was wrong (issue 34)."""
    problems = unaccounted(page)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", page_params(PAGES, ROOT))
def test_page_blocks_run(page: Path, tmp_path: Path) -> None:
    blocks = runnable(page)
    if needs_spark(blocks):
        require_spark()
    namespace = f"pqt{uuid.uuid4().hex[:12]}"
    urls = {name: service_url(name) for name in sorted(services(blocks))}
    dsns = {name: str(BACKENDS[name].namespace_dsn(url, namespace)) for name, url in urls.items()}
    run = PageRun(tmp_path, dsns, namespace)
    try:
        for block in blocks:
            run.run(block)
    finally:
        run.close(lambda name: asyncio.run(BACKENDS[name].cleanup(urls[name], namespace)))
