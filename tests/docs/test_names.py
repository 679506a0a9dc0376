"""Every pqueue name the docs mention where no test runs it exists (issue 34: docs/spark.md
named ``pqueue.spark.spark_session()``, which does not exist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.names import exists, mentioned

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_names_only_what_pqueue_has(page: Path) -> None:
    wrong = [f"{named.where}: {named.name}" for named in mentioned(page, ROOT) if not exists(named.name, SRC)]
    assert not wrong, "names that do not exist:\n" + "\n".join(wrong)


def test_the_finder_is_not_blind() -> None:
    """The docs mention names this test looks up (calls in prose, imports in illustrations)."""
    names = {named.name for page in PAGES for named in mentioned(page, ROOT)}
    assert {"pqueue.spark.session.spark_session", "pqueue.spark.PqueueDataSource"} <= names


PAGE = """# Page

Build it with `pqueue.spark.spark_session()`, or `pqueue.spark.session.spark_session(master)`.
The table `pqueue.jobs` and the meta key `pqueue.tick` are not calls.

<!-- notest: an illustration -->
```python
from pqueue.spark import PqueueDataSource, NoSuchThing
import pqueue.nosuchmodule
pqueue.connect("memory://").nope()
```

```python
from pqueue import NotLookedUp  # this block runs: running it is the check
```
"""


def test_finder_reads_call_spans_and_fences_that_do_not_run(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    found = [(n.where, n.name, exists(n.name, SRC)) for n in mentioned(page, tmp_path)]
    assert found == [
        ("page.md:7", "pqueue.connect", True),
        ("page.md:7", "pqueue.spark.PqueueDataSource", True),  # in __all__, made on first use
        ("page.md:7", "pqueue.spark.NoSuchThing", False),
        ("page.md:7", "pqueue.nosuchmodule", False),
        ("page.md:3", "pqueue.spark.spark_session", False),
        ("page.md:3", "pqueue.spark.session.spark_session", True),
    ]
