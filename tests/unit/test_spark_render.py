"""The report's tables as text and HTML (pure Python: no Spark, no browser)."""

from __future__ import annotations

from pqueue.spark.render import TABLES, cell, html_report


def test_the_rates_table_shows_cancellations_as_their_own_outcome() -> None:
    [columns] = [columns for _, key, columns in TABLES if key == "rates"]
    assert {"cancelled", "cancel_rate"} <= set(columns)
    row = {"queue": "q", "type": "t", "jobs": 1, "failed": 0, "cancelled": 1}
    page = html_report({"rates": [{**row, "failure_rate": None, "cancel_rate": 1.0}]})
    assert "<th>cancel_rate</th>" in page and "<td>100.00 %</td>" in page


def test_rates_are_percent_and_a_rate_over_no_rows_is_a_dash() -> None:
    assert cell("cancel_rate", 0.25) == "25.00 %"
    assert cell("failure_rate", None) == "-"  # every row was cancelled: no run ended to judge
