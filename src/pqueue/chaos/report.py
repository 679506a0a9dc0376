"""What ``pqueue chaos`` prints: the figures, each violation with its history, and the last
line in one fixed shape (``chaos dsn=... seed=... lost=0 doubled=0 violations=0 ...``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from pqueue.chaos.run import Outcome, recover_summary


def summary_line(outcome: Outcome) -> str:
    """The run in one line, the last one printed: scripts and CI read it."""
    v = outcome.verdict
    return (
        f"chaos dsn={outcome.scheme} seed={outcome.settings.seed} jobs={outcome.jobs} "
        f"faults={sum(outcome.faults.values())} lost={v.lost} doubled={v.doubled} "
        f"violations={len(v.violations)} elapsed={outcome.elapsed:.1f}s"
    )


def to_dict(outcome: Outcome) -> dict[str, Any]:
    v = outcome.verdict
    return {
        "ok": outcome.ok,
        "dsn": outcome.scheme,
        "seed": outcome.settings.seed,
        "duration": outcome.settings.duration,
        "workers": outcome.settings.workers,
        "jobs": outcome.jobs,
        "acknowledged": v.acknowledged,
        "final": dict(v.outcomes),
        "faults": dict(outcome.faults),
        "recover_seconds": recover_summary(outcome.recover),
        "lost": v.lost,
        "doubled": v.doubled,
        "violations": [{**violation.to_dict(), "history": lines} for violation, lines in outcome.excerpts]
        + [violation.to_dict() for violation in v.violations[len(outcome.excerpts) :]],
        "elapsed": round(outcome.elapsed, 3),
        "history": str(outcome.history) if outcome.history else None,
        "namespace": outcome.namespace if outcome.kept else None,
    }


def print_outcome(outcome: Outcome, *, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(to_dict(outcome), indent=2) + "\n")
        print(summary_line(outcome), file=sys.stderr)
        return
    v = outcome.verdict
    finals = ", ".join(f"{n} {status}" for status, n in sorted(v.outcomes.items()))
    print(f"jobs: {outcome.jobs} enqueued, {v.acknowledged} acknowledged; final: {finals or 'none'}")
    recover = recover_summary(outcome.recover)
    for kind, n in sorted(outcome.faults.items()):
        r = recover.get(kind)
        after = f"; recovered in {r['median']:.2f}s (median; worst {r['max']:.2f}s)" if r else ""
        print(f"fault {kind}: {n}{after}")
    for violation, lines in outcome.excerpts:
        print(f"\nVIOLATION {violation.rule}: {violation.message}")
        for line in lines:
            print(f"  {line}")
    rest = v.violations[len(outcome.excerpts) :]
    if rest:
        print(
            f"\n... and {len(rest)} more violation(s): "
            + "; ".join(f"{x.rule}: {x.message}" for x in rest[:20])
        )
    if not outcome.ok:
        print(f"\nreproduce with --seed {outcome.settings.seed}; history kept in {outcome.history}; "
              f"namespace kept: {outcome.namespace}")  # fmt: skip
    print(summary_line(outcome))
