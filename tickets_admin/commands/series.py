import argparse
import sys

from tickets.tables import SERIES_TABLE_SUFFIX

from ..journal import Head, SeriesTable, audit, csv_lines, jsonl, printable
from ..registry import Command, Context
from ..table import CounterTable

JOURNAL_TEXT = """\
print a series' journal (JSON Lines or CSV)

Every series of KEY (or --series) in number order, an entry per number (series, time, caller,
Idempotency-Key, ref, void), from the series table as GET /_series/KEY/journal reads it.

examples:
  .venv/bin/python -m tickets_admin journal invoices --series 2026-27 > invoices-2026-27.jsonl
  .venv/bin/python -m tickets_admin journal invoices --format csv > invoices.csv"""


AUDIT_TEXT = """\
check that every number of a series has exactly one journal entry

Every series of KEY (or --series): exits 1 naming each number unaccounted for (no entry) or
recorded twice, and each Idempotency-Key (of one caller) holding more than one number. A
number being issued meanwhile may show as the last (docs/how-to/invoice-series.md).

examples:
  .venv/bin/python -m tickets_admin audit invoices"""


def _series_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", help="the series, as cdk.json's tickets.series names it")
    parser.add_argument("--series", metavar="S", help="one series name (default: all of KEY's)")


def _series_heads(args: argparse.Namespace, context: Context) -> tuple[CounterTable, SeriesTable, list[Head]]:
    table = context.counter_table(SERIES_TABLE_SUFFIX)
    journal = SeriesTable(table.client, table.table)
    with table.dynamodb_errors():
        heads = journal.heads(args.key, args.series)
    if not heads:
        named = f"series {args.series!r} of {args.key!r}" if args.series else f"numbers of {args.key!r}"
        print(f"no {named} in table {table.table}", file=sys.stderr)
    return table, journal, heads


def _journal_arguments(parser: argparse.ArgumentParser) -> None:
    _series_arguments(parser)
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl", help="default: jsonl")


def _journal(args: argparse.Namespace, context: Context) -> int:
    table, journal, heads = _series_heads(args, context)
    if not heads:
        return 1 if args.series else 0
    with table.dynamodb_errors():
        entries = (entry for head in heads for entry in journal.entries(head))
        for line in (jsonl if args.format == "jsonl" else csv_lines)(entries):
            print(line)
    return 0


def _audit(args: argparse.Namespace, context: Context) -> int:
    table, journal, heads = _series_heads(args, context)
    if not heads:
        return 1 if args.series else 0
    with table.dynamodb_errors():
        audits = [audit(head, journal.entries(head)) for head in heads]
    print("\n".join(printable(line) for result in audits for line in result.lines()))
    failed = [result for result in audits if not result.clean]
    print(f"audit: {'FAILED' if failed else 'clean'} ({len(audits)} series, {len(failed)} with problems)")
    return 1 if failed else 0


COMMANDS = (
    Command("audit", AUDIT_TEXT, _audit, _series_arguments),
    Command("journal", JOURNAL_TEXT, _journal, _journal_arguments),
)
