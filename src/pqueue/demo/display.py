"""The demo's live progress bar and its final table of outcomes and timings."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import TYPE_CHECKING, TextIO

from pqueue.job import JobStatus
from pqueue.middleware import Outcome

if TYPE_CHECKING:
    from pqueue.demo.scenario import DemoResult

BAR = 30


class Progress:
    """A one-line bar redrawn in place on a terminal; a line a second otherwise."""

    def __init__(self, total: int, out: TextIO, *, live: bool) -> None:
        self.total = max(total, 1)
        self.out = out
        self.live = live
        self.started = time.perf_counter()
        self._last_line = 0.0

    def update(self, done: int, outcomes: Counter[tuple[str, Outcome]]) -> None:
        now = time.perf_counter()
        if not self.live and now - self._last_line < 1.0 and done < self.total:
            return
        self._last_line = now
        retries = sum(n for (_, outcome), n in outcomes.items() if outcome is Outcome.RETRY)
        dead = sum(n for (_, outcome), n in outcomes.items() if outcome is Outcome.DEAD)
        filled = BAR * done // self.total
        elapsed = now - self.started
        line = (
            f"[{'#' * filled}{'.' * (BAR - filled)}] {done}/{self.total} "
            f"{100 * done // self.total:3d}% | {done / elapsed if elapsed else 0:,.0f} jobs/s "
            f"| retries {retries} | dead {dead} | {elapsed:.1f}s"
        )
        self.out.write(f"\r{line}" if self.live else f"{line}\n")
        self.out.flush()

    def close(self) -> None:
        if self.live:
            self.out.write("\n")
            self.out.flush()


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0] * 1000:.1f}"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[int(q) - 1] * 1000:.1f}"


def render_table(result: DemoResult) -> str:
    """Per job type: jobs, final states (and whether they are the expected ones), runs, timings."""
    t = result.tracker
    header = (
        "job type",
        "jobs",
        "completed",
        "dead",
        "runs",
        "retries",
        "dup acked",
        "p50 ms",
        "p95 ms",
        "as expected",
    )
    rows = [header]
    for job_type in sorted(result.by_type):
        states = result.by_type[job_type]
        runs = len(t.durations[job_type])
        rows.append(
            (
                job_type,
                str(sum(states.values())),
                str(states[JobStatus.COMPLETED]),
                str(states[JobStatus.DEAD]),
                str(runs),
                str(t.outcomes[job_type, Outcome.RETRY]),
                str(t.outcomes[job_type, Outcome.DUPLICATE]),
                _ms(t.durations[job_type], 50),
                _ms(t.durations[job_type], 95),
                "yes" if states == result.expected_by_type[job_type] else "NO",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    total_runs = sum(len(v) for v in t.durations.values())
    lines += [
        "",
        f"run {result.run_id}: {result.created} jobs settled in {result.elapsed:.1f}s (the delayed ones were "
        f"due up to 3 s after enqueue) by {result.workers} workers x {result.concurrency} slots; "
        f"{total_runs} handler runs",
        f"unique: {result.refused} duplicate reports refused at enqueue (the existing job's id returned)",
        f"idempotency: {sum(n for (_, o), n in t.outcomes.items() if o is Outcome.DUPLICATE)} duplicate "
        "charge deliveries acked without running; each charge ran exactly once",
    ]
    if result.ok:
        lines.append(f"OK: every one of the {result.created} jobs reached its expected final state")
    else:
        lines.append(f"FAILED: {len(result.wrong)} job(s) not in their expected state:")
        lines += [f"  {problem}" for problem in result.wrong[:20]]
    return "\n".join(lines)
