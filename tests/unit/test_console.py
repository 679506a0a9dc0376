"""One console for every command (issue 30): a table written to a pipe or file keeps whole
headers and carries no colour codes; ``COLUMNS`` sets the width when given."""

from __future__ import annotations

from io import StringIO

import pytest

from pqueue.cli._console import WIDE, console
from pqueue.spark.render import TABLES, print_tables

ROW = {
    "queue": "demo.default",
    "type": "demo:flaky-api",
    "jobs": 600,
    "completed": 590,
    "failed": 10,
    "dead": 10,
    "retried": 40,
    "recovered": 0,
    "failure_rate": 0.0167,
    "dead_rate": 0.0167,
    "retry_rate": 0.0667,
    "recovery_rate": 0.0,
    "mean_attempts": 1.07,
}


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # COLUMNS: tests/conftest.py removes it


def _header_cells(text: str) -> set[str]:
    return {cell.strip() for line in text.splitlines() for cell in line.split("\u2503")}


def test_a_report_in_a_pipe_keeps_whole_headers(capsys: pytest.CaptureFixture[str]) -> None:
    """``pqueue report > file``: before, a plain rich Console drew 80 columns and the rates
    table's headers came out folded (``que``/``ue``)."""
    print_tables({"rates": [ROW]})  # stdout is captured: not a terminal
    out = capsys.readouterr().out
    rates = next(columns for _, key, columns in TABLES if key == "rates")
    assert set(rates) <= _header_cells(out), out
    assert max(len(line) for line in out.splitlines()) <= WIDE


def test_a_pipe_gets_no_colour_codes_even_when_colour_is_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = StringIO()
    print_tables({"rates": [ROW]}, console=console(file=out))
    assert "\x1b[" not in out.getvalue()
    assert "failure_rate" in out.getvalue()


def test_columns_sets_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    assert console(file=StringIO()).width == WIDE
    monkeypatch.setenv("COLUMNS", "100")
    assert console(file=StringIO()).width == 100
    assert console(stderr=True).width == 100
