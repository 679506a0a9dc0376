"""Output samples the README and docs/cli.md show are what the command prints for the data
they describe.

The ``pqueue stats`` samples are drawn here by the command's own renderer from the counts they
show, so a new column (``waiting`` was missing, issue 30; ``cancelled``, issue 34) cannot
leave them behind.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from pqueue import Stats, WorkerInfo
from pqueue.cli.stats import render
from pqueue.job import JobStatus

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "cli.md"]
PROMPT = "$ pqueue stats"


def sample_stats() -> Stats:
    """The numbers the README's sample shows: three queues, two live workers."""

    def counts(**by_status: int) -> dict[JobStatus, int]:
        return dict.fromkeys(JobStatus, 0) | {JobStatus(s): n for s, n in by_status.items()}

    return Stats(
        {
            "default": counts(pending=5),
            "emails": counts(waiting=2, pending=15, active=4, completed=38, dead=3, cancelled=1),
            "reports": counts(scheduled=12),
        },
        [
            WorkerInfo(f"vm-{pid}", "vm", pid, ("default", "emails"), 8, started_at=0.0)
            for pid in (4100, 4101)
        ],
        oldest_pending_age={"default": 5.1, "emails": 5.1},
        done_per_second={"emails": 0.68},
    )


def sample(page: Path) -> str:
    """The lines of ``page``'s ``text`` block after its ``$ pqueue stats`` prompt."""
    lines = page.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(PROMPT)) + 1
    end = lines.index("```", start)
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_stats_sample_is_what_pqueue_stats_draws(page: Path) -> None:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(sample_stats()))
    drawn = "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))
    assert sample(page) == drawn, f"{page.name}'s stats sample should read:\n{drawn}"
