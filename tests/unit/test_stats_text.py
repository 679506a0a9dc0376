"""Stats as text: the CLI's renderer draws ``str(stats)`` and ``pqueue stats`` from the same
cells; the presentation methods left on ``Stats`` still answer, with a deprecation warning."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from pqueue import Stats, WorkerInfo
from pqueue.cli import stats as stats_command
from pqueue.cli._stats_text import COLUMNS, limit_lines, plain_text, table
from pqueue.job import JobStatus
from pqueue.limits import LimitState


def _stats() -> Stats:
    emails = dict.fromkeys(JobStatus, 0) | {JobStatus.PENDING: 12, JobStatus.DEAD: 3}
    reports = dict.fromkeys(JobStatus, 0) | {JobStatus.WAITING: 2, JobStatus.CANCELLED: 9}
    return Stats(
        {"emails": emails, "reports": reports},
        [WorkerInfo("w-1", "box", 41, ("emails",), 8, started_at=0.0)],
        oldest_pending_age={"emails": 90.0},
        done_per_second={"emails": 0.5},
        paused=("reports",),
        limits=[
            LimitState("emails", "acme", 2, 7, 5, 20.0, 1.0),
            LimitState("reports", "initech", 1, 0, None, None, None),
        ],
    )


def test_str_is_the_plain_text_page() -> None:
    text = str(_stats())
    assert text == plain_text(_stats())
    lines = text.splitlines()
    assert [re.split(r"\s{2,}", line) for line in lines[:3]] == [
        ["queue", *(s.value for s in COLUMNS), "done/s", "oldest pending"],
        ["emails", "0", "12", "0", "0", "0", "0", "3", "0", "0.50", "1.5m"],
        ["reports (paused)", "2", "0", "0", "0", "0", "0", "0", "9", "0.00", "-"],
    ]
    assert len({len(line) for line in lines[:3]}) == 1  # the columns line up
    assert lines[3:] == [
        "limit emails/acme: 2/5 active, 7 waiting, 1.0 tokens at 20/s",
        "limit reports/initech: 1 active, 0 waiting",
        "workers: 1: w-1 (box pid 41)",
    ]


def test_every_status_has_a_column_cancelled_included() -> None:
    """``/stats`` and ``--json`` count cancelled jobs; the table showed no column for them."""
    assert set(COLUMNS) == set(JobStatus)
    header, rows = table(_stats())
    assert header[1 : 1 + len(COLUMNS)] == [s.value for s in COLUMNS]
    assert header[-4:-2] == ["dead", "cancelled"]
    assert dict(zip(header, rows[1], strict=True))["cancelled"] == "9"


def test_str_of_empty_stats_says_so() -> None:
    assert str(Stats({})).splitlines() == [
        "queue  waiting  pending  scheduled  active  retry  completed  dead  cancelled  done/s  "
        "oldest pending",
        "(no queues yet)",
        "workers: 0",
    ]


def test_pqueue_stats_draws_the_same_cells_with_rich() -> None:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(stats_command.render(_stats()))
    drawn = out.getvalue()
    header, rows = table(_stats())
    for cells in [header, *rows]:
        assert all(cell in drawn for cell in cells), cells
    for line in limit_lines(_stats()):
        assert line in drawn
    assert "live workers: 1 - w-1 (box pid 41)" in drawn


def test_presentation_methods_on_stats_are_deprecated_but_answer() -> None:
    stats = _stats()
    with pytest.warns(DeprecationWarning, match=r"Stats\.table\(\) is deprecated"):
        assert stats.table() == table(stats)
    with pytest.warns(DeprecationWarning, match=r"Stats\.limit_lines\(\) is deprecated"):
        assert stats.limit_lines() == limit_lines(stats)
