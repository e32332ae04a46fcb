"""`python -m bench` (or `make bench`): every figure, one run, ratios side by side (bench/README.md)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from . import cold_start, package, report
from .child import run_in_child

DEFAULT_OUT = Path(__file__).resolve().parent / "out"
DURATION = "about a minute on 2 cores"  # as measured; bench/README.md says the same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure Tickets against a bare single-UpdateItem baseline (bench/baseline.py): cold start, warm "
        "call, what opaque ids add to a warm call, DynamoDB writes per ticket and per range block, per-key ceiling, "
        f"local server load, client lease throughput and package size. Takes {DURATION}.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"where table.md (bench/README.md's table), results.json and results.png go (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--cold-samples", type=int, default=15, help="fresh processes per handler for the cold start (default: 15)"
    )
    args = parser.parse_args(argv)
    if args.cold_samples < 1:
        parser.error("--cold-samples must be at least 1")

    began = time.perf_counter()
    machine = {"python": platform.python_version(), "cpus": os.cpu_count()}
    results: dict = {
        "phase_seconds": {},
        "machine": {**machine, "load_average_at_start": [round(load, 2) for load in os.getloadavg()]},
    }
    phases = {
        "package size": package.measure,
        "writes per ticket (moto)": lambda: run_in_child("bench.writes"),
        "warm calls (Stubber)": lambda: run_in_child("bench.warm", rounds=40, calls=100),
        "opaque ids' warm calls (Stubber)": lambda: run_in_child("bench.opaque"),
        "local server and lease": lambda: run_in_child("bench.local"),
        "cold start": lambda: cold_start.measure(args.cold_samples),
    }
    for name, measure in phases.items():
        print(f"bench: {name}...", file=sys.stderr, flush=True)
        phase_began = time.perf_counter()
        results.update(measure())
        results["phase_seconds"][name] = round(time.perf_counter() - phase_began, 1)
    writes = {int(count): value for count, value in results["writes_per_ticket"].items()}
    results["per_key_ceiling"] = report.per_key_ceiling(writes, results["baseline_writes_per_ticket"])
    results["seconds"] = round(time.perf_counter() - began, 1)

    args.out.mkdir(parents=True, exist_ok=True)
    report.write_json(results, args.out / "results.json")
    report.write_chart(results, args.out / "results.png")
    table = report.markdown_table(results)
    (args.out / "table.md").write_text(table, encoding="utf-8")
    print(table)
    print(f"wrote {args.out / 'table.md'}, {args.out / 'results.json'} and {args.out / 'results.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
