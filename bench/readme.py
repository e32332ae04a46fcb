"""`python -m bench.readme`: put the table of the last `make bench` run (bench/out/table.md) into
bench/README.md, between its two markers, and change nothing else."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .__main__ import DEFAULT_OUT
from .environment import REPO

START = "<!-- bench table: `python -m bench.readme` puts bench/out/table.md here -->"
END = "<!-- end of bench table -->"
REPORT = REPO / "bench" / "README.md"  # the one place the table lives


def splice(readme: str, table: str) -> str:
    """`readme` with whatever stands between the markers replaced by `table`."""
    before, start, rest = readme.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the report has no {START!r} ... {END!r} markers")
    return f"{before}{START}\n{table.strip()}\n{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readme", description=__doc__)
    parser.add_argument(
        "--table",
        type=Path,
        default=DEFAULT_OUT / "table.md",
        help="the table to put in (default: the last run's, bench/out/table.md)",
    )
    parser.add_argument("--readme", type=Path, default=REPORT, help="the report to change (default: bench/README.md)")
    args = parser.parse_args(argv)
    try:
        args.readme.write_text(
            splice(args.readme.read_text(encoding="utf-8"), args.table.read_text(encoding="utf-8")), encoding="utf-8"
        )
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"put {args.table} into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
