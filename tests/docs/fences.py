"""Find the code blocks of a Markdown page, and which of them the suite runs.

The convention (README "Docs that run", ADR 0070): a fence whose info string starts with
``python`` or ``bash`` is executed; one right after the HTML comment ``<!-- notest: reason -->``
(on the line before the fence, invisible when rendered) only illustrates. Every other fence
(``text``, ``yaml``, a ``python`` one marked without a reason, ...) is :attr:`Block.unaccounted`:
each fence either runs or says why not, so none is skipped unseen (issue 34). The directive used
to sit in the info string (```` ```bash notest: … ````), where a reader of the raw file trips on
it; that form is refused with a message saying where it goes now. ``py``/``python3`` count as
``python`` and ``sh``/``shell`` as ``bash``, so a block cannot escape the runner by its spelling.
A fence with the info string ``output`` right after a runnable block is what that block
must print (``...`` matches anything, whitespace is normalised, as in doctest). A python block whose
first line is a comment naming a relative file (``# myapp/tasks.py``) is that file: the
runner writes it into the page's working directory instead of executing it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = {
    "python": "python",
    "py": "python",
    "python3": "python",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
}

_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)[ \t]*$")
_NOTEST = re.compile(r"^ {0,3}<!--\s*notest\b[:,;.]?\s*(?P<reason>.*?)\s*-->\s*$")
_FILE_COMMENT = re.compile(r"^#\s*(?P<path>(?:[\w.-]+/)*[\w.-]+\.(?:py|txt|toml|cfg|ini|json))\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and flags, and its text."""

    page: Path
    line: int  # 1-based line of the opening fence
    info: str
    code: str
    output: str | None = None  # the ``output`` fence that follows it, if any
    notest_reason: str | None = None  # the reason of a ``<!-- notest: … -->`` line before it

    @property
    def language(self) -> str | None:
        """``python`` or ``bash`` when the runner knows the block's language, else None."""
        words = self.info.split()
        return LANGUAGES.get(words[0].lower()) if words else None

    @property
    def notest(self) -> bool:
        """Whether a ``<!-- notest: reason -->`` comment marks the block as illustration only."""
        return self.notest_reason is not None

    @property
    def runs(self) -> bool:
        """Whether the suite executes (or, for a file block, writes) this block."""
        return self.language is not None and not self.notest

    @property
    def unaccounted(self) -> str | None:
        """Why the suite neither runs this block nor is told why not; None when it runs (or
        is written, or checked as a runnable block's ``output``) or carries a reason."""
        if self.runs or self.notest_reason:
            return None
        if self.notest:
            return "is marked <!-- notest --> without a reason: write <!-- notest: why it cannot run -->"
        return (
            f"is a ```{self.info or '(no language)'} fence, neither run nor marked: open it with "
            "```python or ```bash and make it run, or write <!-- notest: why --> on the line before it"
        )

    @property
    def file(self) -> str | None:
        """The relative path a python block stands for (``# myapp/tasks.py``), if it names one."""
        if self.language != "python":
            return None
        first = self.code.split("\n", 1)[0]
        match = _FILE_COMMENT.match(first)
        return match["path"] if match else None

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order, each runnable one with its expected output."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(
            rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]
        ):
            line = lines[j]
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: the fence {lines[i].strip()!r} is never closed")
        if _old_directive(opening["info"]):
            raise ValueError(
                f"{page}:{i + 1}: the test directive moved out of the fence's info string: write "
                "`<!-- notest: reason -->` on the line before the fence and open it with "
                f"{fence}{opening['info'].split()[0]} alone (ADR 0070)"
            )
        comment = _NOTEST.match(lines[i - 1]) if i > 0 else None
        reason = comment["reason"] if comment else None
        block = Block(page, i + 1, opening["info"], "\n".join(body) + "\n", notest_reason=reason)
        previous = found[-1] if found else None
        if (
            block.info == "output"
            and previous is not None
            and previous.runs
            and _adjacent(lines, previous, i)
        ):
            found[-1] = dataclasses.replace(previous, output=block.code)
        else:
            found.append(block)
        i = j + 1
    return found


def _old_directive(info: str) -> bool:
    """Whether an info string still carries ``notest`` after its language (the old form)."""
    return any(word.rstrip(":,;.") == "notest" for word in info.split()[1:])


def _adjacent(lines: list[str], previous: Block, opening: int) -> bool:
    """Only blank lines between the end of ``previous`` and the fence opening at ``opening``."""
    end = previous.line + previous.code.count("\n")  # the closing fence of ``previous``
    return all(not line.strip() for line in lines[end + 1 : opening])


def runnable(page: Path) -> list[Block]:
    """The blocks of ``page`` the suite executes or writes, in order."""
    return [b for b in blocks(page) if b.runs]


def unaccounted(page: Path) -> list[str]:
    """``page:line: why`` for each block of ``page`` that neither runs nor says why not."""
    return [f"{b.where}: {why}" for b in blocks(page) if (why := b.unaccounted) is not None]
