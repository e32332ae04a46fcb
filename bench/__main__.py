"""`python -m bench` (or `make bench`): every figure, one run, ratios side by side (bench/README.md)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from . import cold_start, report
from .child import run_in_child

DEFAULT_OUT = Path(__file__).resolve().parent / "out"
DURATION = "about a minute on 2 cores"  # as measured; bench/README.md says the same


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure Tickets against a bare single-UpdateItem baseline (bench/baseline.py): the figures of "
        f"bench/README.md's table. Takes {DURATION}.",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where table.md and results.json go (bench/out)")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    load = [round(load, 2) for load in os.getloadavg()]
    machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average_at_start": load}
    results: dict = {"machine": machine}
    phases = {
        "package size": cold_start.package_size,
        "warm calls (Stubber)": lambda: run_in_child("bench.warm"),
        "opaque ids' warm calls (Stubber)": lambda: run_in_child("bench.opaque"),
        "local server and lease": lambda: run_in_child("bench.local"),
        "cold start": cold_start.measure,
    }
    for name, measure in phases.items():
        print(f"bench: {name}...", file=sys.stderr, flush=True)
        results.update(measure())
    results["seconds"] = round(time.perf_counter() - began, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    results["goals_met"] = report.goals_met(results)
    (args.out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    table = report.markdown_table(results)
    (args.out / "table.md").write_text(table, encoding="utf-8")
    print(table)
    print(f"wrote {args.out / 'table.md'} and {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
