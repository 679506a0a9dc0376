"""Output samples the README shows are what the command prints for the data they describe.

The ``pqueue stats`` sample is drawn here by the command's own renderer from the counts it
shows, so a new column (``waiting`` was missing, issue 30) cannot leave it behind.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from pqueue import Stats, WorkerInfo
from pqueue.cli.stats import render
from pqueue.job import JobStatus

README = Path(__file__).resolve().parents[2] / "README.md"
COMMAND = "$ pqueue stats --dsn redis://127.0.0.1:6379/0"


def sample_stats() -> Stats:
    """The numbers the README's sample shows: three queues, two live workers."""

    def counts(**by_status: int) -> dict[JobStatus, int]:
        return dict.fromkeys(JobStatus, 0) | {JobStatus(s): n for s, n in by_status.items()}

    return Stats(
        {
            "default": counts(pending=5),
            "emails": counts(waiting=2, pending=15, active=4, completed=38, dead=3),
            "reports": counts(scheduled=12),
        },
        [
            WorkerInfo(f"vm-{pid}", "vm", pid, ("default", "emails"), 8, started_at=0.0)
            for pid in (4100, 4101)
        ],
        oldest_pending_age={"default": 5.1, "emails": 5.1},
        done_per_second={"emails": 0.68},
    )


def readme_sample() -> str:
    """The lines of the README's ``text`` block after the ``pqueue stats`` prompt."""
    lines = README.read_text(encoding="utf-8").split("\n")
    start = lines.index(COMMAND) + 1
    end = lines.index("```", start)
    return "\n".join(lines[start:end])


def test_the_readme_stats_sample_is_what_pqueue_stats_draws() -> None:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(sample_stats()))
    drawn = "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))
    assert readme_sample() == drawn, f"README.md's stats sample should read:\n{drawn}"
