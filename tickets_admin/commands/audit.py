from __future__ import annotations

import argparse

from ..journal import SERIES_EPILOG, audit, printable, series_arguments, series_heads
from ..registry import Command, Context

TEXT = """\
check that every number of a series has exactly one journal entry

Check every series of KEY (or the one --series names) from its first number to its last: each
number must have exactly one journal entry, and each Idempotency-Key (of one caller) at most
one. Prints per series its numbers, how many were issued and voided; exits 1 naming every
number unaccounted (no entry) or recorded twice, and every Idempotency-Key with more than one
number. A number being issued while this runs may show as the series' last number."""


def _audit(args: argparse.Namespace, context: Context) -> int:
    table, journal, heads = series_heads(args, context)
    if not heads:
        return 1 if args.series else 0
    with table.dynamodb_errors():
        audits = [audit(head, journal.entries(head)) for head in heads]
    for result in audits:
        for line in result.lines():
            print(printable(line))
    failed = [result for result in audits if not result.clean]
    print(f"audit: {'FAILED' if failed else 'clean'} ({len(audits)} series, {len(failed)} with problems)")
    return 1 if failed else 0


COMMAND = Command("audit", TEXT, SERIES_EPILOG, _audit, series_arguments)
