"""`python -m bench.profile {cold,warm}`: where the time of a cold start or a warm call goes.

cold: `python -X importtime` of each handler module in a fresh process, from the asset copy the cold-start figure
uses; the imports that cost most, cumulative. warm: cProfile around warm Tickets calls (DynamoDB stubbed, as in
warm.py), self time grouped by package, then the costliest functions.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import io
import os
import pstats
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .cold_start import BASELINE_HANDLER, TICKETS_HANDLER
from .environment import child_env, environment, function_url_event, handler_env, lambda_context
from .package import build_task_root
from .warm import StubbedHandler

_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def cold(rows: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tickets-bench-profile-") as directory:
        task_root = build_task_root(Path(directory))
        for module in (BASELINE_HANDLER, TICKETS_HANDLER):
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", f"import {module}"],
                env=child_env(handler_env(), [task_root]),
                cwd=task_root,
                capture_output=True,
                text=True,
                check=True,
            )
            lines = map(_IMPORT_LINE.match, done.stderr.splitlines())
            imports = [(int(m[2]), len(m[3]) // 2, m[4]) for m in lines if m]
            print(f"\n== import {module}: the {rows} costliest imports (ms, cumulative; depth)")
            for cumulative_us, depth, name in sorted(imports, reverse=True)[:rows]:
                print(f"{cumulative_us / 1000:9.1f}  {'  ' * depth}{name}")


def warm(rows: int, calls: int) -> None:
    with environment(handler_env()), open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        handler = StubbedHandler.tickets()
        handler.run_round(100)  # warm up
        handler.queue(calls)
        invocations = [(function_url_event(f"/{handler.key}"), lambda_context()) for _ in range(calls)]
        profile = cProfile.Profile()
        profile.enable()
        for event, context in invocations:
            handler.handler(event, context)
        profile.disable()
    stats = pstats.Stats(profile, stream=io.StringIO())
    groups: collections.Counter[str] = collections.Counter()
    for (filename, _, function), (_, _, self_time, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        groups[_package(filename, function)] += self_time
    total = sum(groups.values())
    print(f"== warm Tickets call: {1e6 * total / calls:.0f} µs under cProfile; self time by package")
    for group, self_time in groups.most_common(rows):
        print(f"{1e6 * self_time / calls:9.1f} µs {100 * self_time / total:5.1f}%  {group}")
    stats.stream = sys.stdout  # type: ignore[attr-defined]
    stats.sort_stats("cumulative").print_stats(rows)


def _package(filename: str, function: str) -> str:
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    if "/tickets/" in filename:
        return "tickets (lambda_src)"
    if filename.startswith("~"):
        return "builtin " + function
    path = Path(filename)
    return "stdlib " + (path.parent.name if path.stem == "__init__" else path.stem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile", description="Where the time of a cold start or a warm call of the handler goes."
    )
    parser.add_argument(
        "what",
        choices=("cold", "warm"),
        help="cold: import times of both handler modules; warm: cProfile of warm calls",
    )
    parser.add_argument("--rows", type=int, default=25, help="how many lines to show (default: 25)")
    parser.add_argument("--calls", type=int, default=2000, help="warm: calls profiled (default: 2000)")
    args = parser.parse_args(argv)
    if args.what == "cold":
        cold(args.rows)
    else:
        warm(args.rows, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
