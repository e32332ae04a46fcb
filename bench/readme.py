"""`python -m bench.readme [TABLE]`: put the table of the last `make bench` run (TABLE, by default
bench/out/table.md) into bench/README.md, between its two markers, and change nothing else."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .__main__ import DEFAULT_OUT

START = "<!-- bench table: `python -m bench.readme` puts bench/out/table.md here -->"
END = "<!-- end of bench table -->"
REPORT = Path(__file__).with_name("README.md")


def splice(readme: str, table: str) -> str:
    before, start, rest = readme.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the report has no {START!r} ... {END!r} markers")
    return f"{before}{START}\n{table.strip()}\n{END}{after}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.readme", description=__doc__)
    parser.add_argument("table", nargs="?", type=Path, default=DEFAULT_OUT / "table.md")
    table = parser.parse_args(argv).table
    try:
        REPORT.write_text(splice(REPORT.read_text(encoding="utf-8"), table.read_text(encoding="utf-8")), "utf-8")
    except (OSError, ValueError) as err:
        sys.exit(f"error: {err}")
    print(f"put {table} into {REPORT}")


if __name__ == "__main__":
    main()
