"""Turn a sitting's JSON lines (bench/sitting.py) into markdown tables and a PNG chart.

For each backend: every contestant's median (min-max) per scenario, and pqueue's ratio
against the best peer of that sitting. The last record per (adapter, backend, scenario,
procs) wins.

    python bench/report.py bench/results/sitting.jsonl --chart docs/benchmarks.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

Record = dict[str, Any]
COLUMNS = [
    ("enqueue_single", None, "single enqueue jobs/s"),
    ("enqueue_batch", None, "batch enqueue jobs/s"),
    ("drain", 1, "drain 1 proc jobs/s"),
    ("drain", 2, "drain 2 procs jobs/s"),
    ("latency", 1, "latency p50 / p99 ms"),
]


def load(path: Path) -> dict[tuple[str, str, str, int | None], Record]:
    records: dict[tuple[str, str, str, int | None], Record] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        procs = rec.get("procs") if rec.get("scenario") in ("drain", "latency") else None
        records[(rec["backend"], rec["adapter"], rec["scenario"], procs)] = rec
    return records


def latency(rec: Record) -> tuple[float, float] | None:
    runs = [r for r in rec.get("runs", []) if "p50_ms" in r]
    if not runs:
        return None
    p50 = sorted(r["p50_ms"] for r in runs)[len(runs) // 2]
    p99 = sorted(r["p99_ms"] for r in runs)[len(runs) // 2]
    return p50, p99


def cell(rec: Record | None, scenario: str) -> str:
    if rec is None:
        return "-"
    if rec.get("na"):
        return "n/a"
    if rec.get("median") is None:
        return "failed"
    if scenario == "latency":
        lat = latency(rec)
        return "-" if lat is None else f"{lat[0]:.2f} / {lat[1]:.2f}"
    return f"{rec['median']:,.0f} ({rec['min']:,.0f}-{rec['max']:,.0f})"


def best_peer(records: dict[tuple[str, str, str, int | None], Record], backend: str, scenario: str,
              procs: int | None) -> tuple[str, Record] | None:  # fmt: skip
    peers = [
        (adapter, rec)
        for (b, adapter, s, p), rec in records.items()
        if b == backend and s == scenario and p == procs and adapter != "pqueue" and rec.get("median")
    ]
    if not peers:
        return None
    if scenario == "latency":
        return min(peers, key=lambda item: (latency(item[1]) or (1e9, 1e9))[1])
    return max(peers, key=lambda item: item[1]["median"])


def table(records: dict[tuple[str, str, str, int | None], Record], backend: str) -> str:
    adapters = sorted({a for (b, a, _, _) in records if b == backend}, key=lambda a: (a == "pqueue", a))
    lines = [
        "| | " + " | ".join(title for _, _, title in COLUMNS) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
    ]
    for adapter in adapters:
        cells = [cell(records.get((backend, adapter, s, p)), s) for s, p, _ in COLUMNS]
        lines.append(f"| {adapter} | " + " | ".join(cells) + " |")
    ratios = []
    for scenario, procs, _ in COLUMNS:
        ours = records.get((backend, "pqueue", scenario, procs))
        best = best_peer(records, backend, scenario, procs)
        if not ours or not ours.get("median") or best is None:
            ratios.append("-")
        elif scenario == "latency":
            mine, theirs = latency(ours), latency(best[1])
            ratios.append(
                "-"
                if not mine or not theirs
                else f"p50 {mine[0] / theirs[0]:.2f}x / p99 {mine[1] / theirs[1]:.2f}x {best[0]}"
            )
        else:
            ratios.append(f"{ours['median'] / best[1]['median']:.2f}x {best[0]}")
    lines.append("| **pqueue / best peer** | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def chart(records: dict[tuple[str, str, str, int | None], Record], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for row, backend in enumerate(("redis", "postgres")):
        adapters = sorted({a for (b, a, _, _) in records if b == backend}, key=lambda a: (a == "pqueue", a))
        throughput = [(s, p, t) for s, p, t in COLUMNS if s != "latency"]
        ax = axes[row][0]
        width = 0.8 / max(len(adapters), 1)
        for i, adapter in enumerate(adapters):
            values = [
                (records.get((backend, adapter, s, p)) or {}).get("median") or 0 for s, p, _ in throughput
            ]
            ax.bar([x + i * width for x in range(len(throughput))], values, width, label=adapter)
        ax.set_xticks([x + width * (len(adapters) - 1) / 2 for x in range(len(throughput))])
        ax.set_xticklabels([t.replace(" jobs/s", "") for _, _, t in throughput], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("jobs/s (log)")
        ax.set_title(f"{backend}: throughput (higher is better)")
        ax.legend(fontsize=8)
        ax = axes[row][1]
        names, p50s, p99s = [], [], []
        for adapter in adapters:
            lat = latency(records.get((backend, adapter, "latency", 1)) or {})
            if lat:
                names.append(adapter)
                p50s.append(lat[0])
                p99s.append(lat[1])
        xs = range(len(names))
        for offset, values, label in ((-0.2, p50s, "p50"), (0.2, p99s, "p99")):
            bars = ax.bar([x + offset for x in xs], values, 0.4, label=label)
            ax.bar_label(bars, labels=[f"{v:.2g}" for v in values], fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names)
        if p50s and max(p99s) > 20 * min(p50s):  # one peer's tail can be 1000x another's median
            ax.set_yscale("log")
            ax.set_ylim(bottom=min(p50s) / 2)
            ax.set_ylabel("ms (log)")
        else:
            ax.set_ylabel("ms")
        ax.set_title(f"{backend}: pick-up latency (lower is better)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", type=Path)
    parser.add_argument("--chart", type=Path, default=None)
    args = parser.parse_args()
    records = load(args.results)
    for backend in ("redis", "postgres"):
        print(f"\n### {backend}\n")
        print(table(records, backend))
    if args.chart:
        chart(records, args.chart)
        print(f"\nchart: {args.chart}")


if __name__ == "__main__":
    main()
