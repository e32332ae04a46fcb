"""`python -m bench.profile {cold,warm,line}`: where the time of a cold start or a warm call goes.

cold: `python -X importtime` of each handler module in a fresh process, from the asset
copy the cold-start figure uses; the imports that cost most, cumulative.
warm: cProfile around warm Tickets calls (DynamoDB stubbed, as in warm.py), self time
grouped by package, then the costliest functions.
line: what the per-issuance audit record costs, measured as warm.py measures (rounds of calls,
side by side, medians, no profiler): Tickets as it is (the audit fields in the request's EMF
metrics line, tickets.log_format.record_issuance), with the audit as a line of its own through
Powertools' `logger.info`, and with no audit at all, against the baseline.
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
from .environment import child_env, environment, handler_env
from .package import build_task_root

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
            imports = [
                (int(m[2]), len(m[3]) // 2, m[4]) for m in map(_IMPORT_LINE.match, done.stderr.splitlines()) if m
            ]
            print(f"\n== import {module}: the {rows} costliest imports (ms, cumulative; depth)")
            for cumulative_us, depth, name in sorted(imports, reverse=True)[:rows]:
                print(f"{cumulative_us / 1000:9.1f}  {'  ' * depth}{name}")


def warm(rows: int, calls: int) -> None:
    from .environment import function_url_event, lambda_context, tickets_app
    from .warm import KEY, StubbedHandler

    with environment(handler_env()), contextlib.redirect_stdout(open(os.devnull, "w")) as null:
        app = tickets_app()
        handler = StubbedHandler(
            app.lambda_handler, app.dynamodb, lambda last: {"last": {"N": str(last)}, "step": {"N": "1"}}
        )
        handler.run_round(100)  # warm up
        handler.queue(calls)
        invocations = [(function_url_event(f"/{KEY}"), lambda_context()) for _ in range(calls)]
        profile = cProfile.Profile()
        profile.enable()
        for event, context in invocations:
            handler.handler(event, context)
        profile.disable()
        null.close()
    stats = pstats.Stats(profile, stream=io.StringIO())
    groups: collections.Counter[str] = collections.Counter()
    for (filename, _, function), (_, _, self_time, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        groups[_package(filename, function)] += self_time
    total = sum(groups.values())
    print(f"== warm Tickets call: {1e6 * total / calls:.0f} µs under cProfile; self time by package")
    for group, self_time in groups.most_common(rows):
        print(f"{1e6 * self_time / calls:9.1f} µs {100 * self_time / total:5.1f}%  {group}")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(rows)
    print(out.getvalue())


def line(rounds: int, calls: int) -> None:
    import importlib
    import statistics

    from .environment import BASELINE_MODULE, tickets_app
    from .warm import StubbedHandler

    with environment(handler_env()), contextlib.redirect_stdout(open(os.devnull, "w")) as null:
        app, baseline = tickets_app(), importlib.import_module(BASELINE_MODULE)
        import tickets.app as tickets  # its module-level logger
        import tickets.counters as counters  # its audit record, swapped below

        for handler in tickets.logger.handlers:
            handler.setStream(null)
        in_metrics_line = counters.record_issuance

        def through_logger_info(metrics: object, **fields: object) -> None:
            tickets.logger.info("issued", extra=fields)

        def no_audit(metrics: object, **fields: object) -> None:
            pass

        stubbed = StubbedHandler(
            app.lambda_handler, app.dynamodb, lambda last: {"last": {"N": str(last)}, "step": {"N": "1"}}
        )
        variants = {  # name: (handler, audit record)
            "baseline": (
                StubbedHandler(
                    baseline.lambda_handler, baseline.table.meta.client, lambda last: {"last": {"N": str(last)}}
                ),
                None,
            ),
            "Tickets, audit fields in the metrics line": (stubbed, in_metrics_line),
            "Tickets, the audit as a logger.info line": (stubbed, through_logger_info),
            "Tickets, no audit": (stubbed, no_audit),
        }
        durations: dict[str, list[float]] = {name: [] for name in variants}
        for round_index in range(rounds + 1):  # the first round warms up
            for name, (handler, record) in variants.items():
                if record is not None:
                    counters.record_issuance = record
                measured = handler.run_round(calls)
                if round_index:
                    durations[name].extend(measured)
        counters.record_issuance = in_metrics_line
        null.close()
    medians = {name: 1e6 * statistics.median(measured) for name, measured in durations.items()}
    print(f"== warm calls, median of {rounds * calls} each, side by side (load average {os.getloadavg()[0]:.1f})")
    for name, median in medians.items():
        print(f"{median:7.0f} µs  {median / medians['baseline']:5.2f}x  {name}")


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
        choices=("cold", "warm", "line"),
        help="cold: import times of both handler modules; warm: cProfile of warm Tickets calls; "
        "line: the audit record's cost, side by side",
    )
    parser.add_argument("--rows", type=int, default=25, help="how many lines to show (default: 25)")
    parser.add_argument("--calls", type=int, default=2000, help="warm: calls profiled (default: 2000)")
    parser.add_argument("--rounds", type=int, default=30, help="line: rounds of 100 calls per variant (default: 30)")
    args = parser.parse_args(argv)
    if args.what == "cold":
        cold(args.rows)
    elif args.what == "warm":
        warm(args.rows, args.calls)
    else:
        line(args.rounds, 100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
