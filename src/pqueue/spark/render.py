"""Show a collected report: rich tables in the terminal, one self-contained HTML file.

The input is plain rows (lists of dicts from :func:`pqueue.spark.report.collect`), so
this module needs neither Spark nor a browser. The HTML has no scripts and no external
links: tables, plus two inline SVG line charts (throughput and latency over time) drawn
here in a few lines, so the file opens anywhere, offline, and can be mailed around.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

Rows = Sequence[Mapping[str, Any]]

TABLES = (
    ("Rates", "rates", ("queue", "type", "jobs", "completed", "failed", "cancelled", "dead", "retried",
                        "recovered", "failure_rate", "cancel_rate", "dead_rate", "retry_rate",
                        "recovery_rate", "mean_attempts")),
    ("Wait and run time (seconds)", "latency", ("queue", "type", "jobs", "wait_p50_s", "wait_p95_s",
                                                "wait_p99_s", "run_p50_s", "run_p95_s", "run_p99_s")),
    ("Top errors", "top_errors", ("queue", "type", "last_error_kind", "last_error_message", "jobs")),
)  # fmt: skip
"""(title, key in the collected report, columns) of every table shown."""

_RATE_COLUMNS = frozenset({"failure_rate", "cancel_rate", "dead_rate", "retry_rate", "recovery_rate"})


def cell(column: str, value: Any) -> str:
    """One value as text: rates in percent, seconds to 3 significant places, times ISO."""
    if value is None:
        return "-"
    if column in _RATE_COLUMNS:
        return f"{100 * value:.2f} %"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def print_tables(tables: Mapping[str, Rows], *, console: Console | None = None) -> None:
    """Print the report's tables with rich, on ``console`` or the commands' own one
    (:func:`pqueue.cli._console.console`: the terminal's width, or wide in a pipe)."""
    from rich.table import Table

    if console is None:
        from pqueue.cli._console import console as command_console

        console = command_console()
    for title, key, columns in TABLES:
        table = Table(title=title, title_justify="left")
        for column in columns:
            table.add_column(
                column, justify="left" if column in ("queue", "type") else "right", overflow="fold"
            )
        for row in tables.get(key, ()):
            table.add_row(*(cell(c, row.get(c)) for c in columns))
        console.print(table)


def _svg_chart(title: str, series: Mapping[str, Sequence[tuple[float, float]]], unit: str) -> str:
    """A line chart of ``series`` (name -> [(epoch seconds, value)]) as inline SVG."""
    width, height, pad, legend = 720, 260, 48, 140  # legend: room for the series names
    points = [p for line in series.values() for p in line]
    if not points:
        return f"<h2>{html.escape(title)}</h2><p>No data.</p>"
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    top = max(p[1] for p in points) or 1.0
    span = (x1 - x0) or 1.0

    def xy(point: tuple[float, float]) -> str:
        x = pad + (point[0] - x0) / span * (width - 2 * pad)
        y = height - pad - point[1] / top * (height - 2 * pad)
        return f"{x:.1f},{y:.1f}"

    colours = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + legend}" height="{height}" role="img">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>',
        f'<text x="4" y="{pad - 8}" font-size="11">{cell("", top)} {html.escape(unit)}</text>',
        f'<text x="{pad - 6}" y="{height - pad + 4}" font-size="11" text-anchor="end">0</text>',
        f'<text x="{pad}" y="{height - 8}" font-size="11">{datetime.fromtimestamp(x0):%Y-%m-%d %H:%M}</text>',
        f'<text x="{width - pad}" y="{height - 8}" font-size="11" text-anchor="end">'
        f"{datetime.fromtimestamp(x1):%Y-%m-%d %H:%M}</text>",
    ]
    for i, (name, line) in enumerate(sorted(series.items())):
        colour = colours[i % len(colours)]
        path = " ".join(xy(p) for p in sorted(line))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>')
        parts.append(
            f'<text x="{width - pad + 4}" y="{pad + 14 * i}" font-size="11" fill="{colour}">'
            f"{html.escape(name)}</text>"
        )
    parts.append("</svg>")
    return f"<h2>{html.escape(title)}</h2>" + "".join(parts)


def _throughput_series(rows: Rows) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, dict[float, float]] = {}
    for row in rows:
        line = series.setdefault(str(row["queue"]), {})
        at = row["bucket"].timestamp()
        line[at] = line.get(at, 0.0) + float(row["jobs_per_minute"])
    return {name: sorted(points.items()) for name, points in series.items()}


def _latency_series(rows: Rows) -> dict[str, list[tuple[float, float]]]:
    names = ("wait_p50_s", "wait_p95_s", "run_p50_s", "run_p95_s")
    return {
        name: [(row["bucket"].timestamp(), float(row[name])) for row in rows if row.get(name) is not None]
        for name in names
    }


def html_report(tables: Mapping[str, Rows], *, title: str = "pqueue report") -> str:
    """The whole report as one HTML document."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    body.append(_svg_chart("Throughput (jobs finished per minute, by queue)",
                           _throughput_series(tables.get("throughput", ())), "jobs/min"))  # fmt: skip
    body.append(_svg_chart("Latency over time (seconds, all queues)",
                           _latency_series(tables.get("latency_over_time", ())), "s"))  # fmt: skip
    for heading, key, columns in TABLES:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell(c, row.get(c)))}</td>" for c in columns) + "</tr>"
            for row in tables.get(key, ())
        )
        body.append(f"<h2>{html.escape(heading)}</h2><table><tr>{head}</tr>{rows}</table>")
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
        "table{border-collapse:collapse;margin-bottom:1.5em}"
        "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}"
        "td:nth-child(-n+2){text-align:left}"
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )
