from __future__ import annotations

import argparse
import itertools

from ..journal import csv_lines, jsonl, series_arguments, series_heads
from ..registry import Command, Context

TEXT = """\
print a series' journal (JSON Lines or CSV)

Every series of KEY (or --series) in number order, an entry per number (series, time, caller,
Idempotency-Key, ref, void), from the series table as GET /_series/KEY/journal reads it.

examples:
  .venv/bin/python -m tickets_admin journal invoices --series 2026-27 > invoices-2026-27.jsonl
  .venv/bin/python -m tickets_admin journal invoices --format csv > invoices.csv"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    series_arguments(parser)
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl", help="default: jsonl")


def _journal(args: argparse.Namespace, context: Context) -> int:
    table, journal, heads = series_heads(args, context)
    if not heads:
        return 1 if args.series else 0
    with table.dynamodb_errors():
        entries = itertools.chain.from_iterable(journal.entries(head) for head in heads)
        for line in (jsonl if args.format == "jsonl" else csv_lines)(entries):
            print(line)
    return 0


COMMAND = Command("journal", TEXT, _journal, _arguments)
