"""The block finder: which fences run, which only illustrate, outputs and file blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.fences import blocks, runnable, unaccounted
from tests.docs.runner import PageRun
from tests.docs.test_docs import page_params

PAGE = """# A page

```python
# myapp/tasks.py
X = 1
```

```python
print(1 + 1)
```

```output
2
```

<!-- notest: runs until SIGTERM -->
```bash
pqueue worker app:router
```

```sh
echo hi
```

```text
not code
```

- in a list:

  ```py
  y = 2
  ```
"""


def write(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text)
    return page


def test_languages_notest_outputs_and_files(tmp_path: Path) -> None:
    found = blocks(write(tmp_path, PAGE))
    assert [(b.line, b.language, b.notest) for b in found] == [
        (3, "python", False),
        (8, "python", False),
        (17, "bash", True),
        (21, "bash", False),
        (25, None, False),  # ```text: not run
        (31, "python", False),
    ]
    assert found[2].notest_reason == "runs until SIGTERM"
    assert found[0].file == "myapp/tasks.py"
    assert found[1].file is None and found[1].output == "2\n"
    assert found[5].code == "y = 2\n"  # the list's indentation is taken off
    assert [b.line for b in runnable(write(tmp_path, PAGE))] == [3, 8, 21, 31]


@pytest.mark.parametrize(
    ("comment", "reason"),
    [
        ("<!-- notest -->", ""),
        ("<!--notest: needs your own module-->", "needs your own module"),
        ("  <!-- notest, runs forever -->", "runs forever"),
    ],
)
def test_a_notest_comment_on_the_line_before_marks_the_block(
    tmp_path: Path, comment: str, reason: str
) -> None:
    [block] = blocks(write(tmp_path, f"{comment}\n```bash\nsleep 1000\n```\n"))
    assert block.notest and block.notest_reason == reason and not block.runs


@pytest.mark.parametrize(
    "text",
    [
        "<!-- notest -->\n\n```bash\nexit 1\n```\n",  # a blank line between: the comment is not the fence's
        "<!-- a note for editors -->\n```bash\nexit 1\n```\n",  # another comment
        "Prose that mentions <!-- notest --> inline.\n```bash\nexit 1\n```\n",
    ],
)
def test_only_a_notest_comment_right_before_the_fence_counts(tmp_path: Path, text: str) -> None:
    [block] = blocks(write(tmp_path, text))
    assert block.runs and block.notest_reason is None


def test_the_old_directive_in_the_info_string_is_refused_with_the_new_form(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"page.md:3: .*<!-- notest: reason -->.*```bash alone"):
        blocks(write(tmp_path, "# A page\n\n```bash notest: runs until SIGTERM\npqueue worker\n```\n"))


def test_the_output_block_after_a_notest_block_stays_its_own_block(tmp_path: Path) -> None:
    found = blocks(write(tmp_path, "<!-- notest -->\n```python\nprint(1)\n```\n```output\n1\n```\n"))
    assert [(b.info, b.output) for b in found] == [("python", None), ("output", None)]


def test_an_output_block_after_prose_is_not_an_expectation(tmp_path: Path) -> None:
    text = "```python\nprint(3)\n```\n\nSome prose.\n\n```output\n3\n```\n"
    [code, output] = blocks(write(tmp_path, text))
    assert code.output is None and output.info == "output"


def test_an_unclosed_fence_is_an_error_not_a_silently_skipped_block(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="never closed"):
        blocks(write(tmp_path, "```python\nprint(1)\n"))


def test_dsns_are_rewritten_to_the_namespace_keeping_other_options(tmp_path: Path) -> None:
    run = PageRun(
        tmp_path,
        {"redis": "redis://127.0.0.1:6379/3?prefix=ns1", "postgres": "postgresql://h/t?schema=ns1"},
        "ns1",
    )
    try:
        code = (
            'a = "redis://localhost:6379/0"\n'
            "b = 'postgresql://app@db/app?schema=jobs&retention=60'\n"
            'c = "memory://t1?retention=5"; d = "memory://"\n'
        )
        assert run.rewrite(code) == (
            'a = "redis://127.0.0.1:6379/3?prefix=ns1"\n'
            "b = 'postgresql://h/t?schema=ns1&retention=60'\n"
            'c = "memory://ns1-t1?retention=5"; d = "memory://ns1-default"\n'
        )
    finally:
        run.close(lambda service: None)


def test_a_fence_that_neither_runs_nor_says_why_is_unaccounted(tmp_path: Path) -> None:
    text = (
        "```python\nprint(1)\n```\n\n```output\n1\n```\n\n"  # runs, with its output
        "<!-- notest: a diagram -->\n```text\na -> b\n```\n\n"  # says why
        "<!-- notest -->\n```python\nspark.stop()\n```\n\n"  # marked, no reason
        "```yaml\nkey: value\n```\n\n"  # neither
        "```\nno language\n```\n"
    )
    problems = unaccounted(write(tmp_path, text))
    assert [p.split(": ", 1)[0] for p in problems] == ["page.md:15", "page.md:19", "page.md:23"]
    assert "without a reason: write <!-- notest: why it cannot run -->" in problems[0]
    assert "```yaml fence, neither run nor marked" in problems[1]
    assert "```(no language) fence" in problems[2]


SPARK_PAGE = """# Spark

```python
from pqueue.spark.session import spark_session

spark = spark_session("local[2]")
```

```python
spark.read.format("pqueue").option("dsn", "redis://localhost:6379/0").load().show()
```
"""

ILLUSTRATED_PAGE = """# Not run

<!-- notest: needs a cluster -->
```python
import pyspark
```

```python
print("redis://localhost:6379/0 is only text here, but a DSN")
```
"""


def test_pages_that_use_spark_are_collected_for_the_spark_step(tmp_path: Path) -> None:
    """A page whose runnable blocks use PySpark or the data source is marked ``spark`` (run by
    ``make spark``, deselected elsewhere) with the services its DSNs name; PySpark in a block
    that does not run does not move the page; a page with nothing to run is no param."""
    pages = []
    for name, text in [("spark.md", SPARK_PAGE), ("plain.md", ILLUSTRATED_PAGE), ("none.md", "# No code\n")]:
        pages.append(tmp_path / name)
        pages[-1].write_text(text, encoding="utf-8")
    params = page_params(pages, tmp_path)
    assert [(p.id, sorted(m.name for m in p.marks)) for p in params] == [  # type: ignore[attr-defined]
        ("spark.md", ["redis", "spark"]),
        ("plain.md", ["redis"]),
    ]
