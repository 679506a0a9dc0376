"""Every ``pqueue`` command the README and docs/*.md name exists in the real CLI parser.

A page that names ``pqueue jobs cancel`` when the command is ``pqueue cancel`` sends
readers to an error; this test reads the code spans and shell fences of every page and
checks each command path against :func:`pqueue.cli.build_parser`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pqueue.cli import build_parser
from tests.docs.commands import cli_tree, missing, named_commands

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TREE = cli_tree(build_parser())


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_names_only_commands_the_cli_has(page: Path) -> None:
    wrong = [
        f"{named.where}: pqueue {' '.join(named.words)} (no {word!r})"
        for named in named_commands(page, ROOT)
        if (word := missing(named.words, TREE)) is not None
    ]
    assert not wrong, "\n".join(wrong)


def test_the_docs_name_commands_at_all() -> None:
    """The finder is not blind: the docs name most of the CLI's commands."""
    named = {n.words[0] for page in PAGES for n in named_commands(page, ROOT)}
    assert {"worker", "stats", "jobs", "cancel", "dlq", "migrate"} <= named


PAGE = """# Page

Cancel with `pqueue jobs cancel`, or `pqueue dlq list|requeue` and `python -m pqueue worker …`.
Prose about pqueue stats is not a command.

```bash
# installs pqueue into the venv
PQUEUE_DSN=memory:// pqueue stats --json | jq .queues
harness.py --adapter pqueue --scenario drain
echo "$(pqueue workers)"
```

```python
from pqueue import Job  # pqueue bogus
```
"""


def test_finder_reads_spans_and_shell_fences_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    assert [(n.where, n.words) for n in named_commands(page, tmp_path)] == [
        ("page.md:8", ("stats",)),
        ("page.md:10", ("workers",)),
        ("page.md:3", ("jobs", "cancel")),
        ("page.md:3", ("dlq", "list")),
        ("page.md:3", ("dlq", "requeue")),
        ("page.md:3", ("worker",)),
    ]


def test_missing_names_the_first_unknown_word() -> None:
    assert missing(("jobs", "cancel"), TREE) == "cancel"
    assert missing(("jobs", "list"), TREE) is None
    assert missing(("cancel", "abc"), TREE) is None  # cancel has no sub-commands: abc is an argument
    assert missing(("nosuch",), TREE) == "nosuch"
