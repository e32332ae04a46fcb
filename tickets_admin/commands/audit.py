from __future__ import annotations

import argparse

from ..journal import audit, printable, series_arguments, series_heads
from ..registry import Command, Context

TEXT = """\
check that every number of a series has exactly one journal entry

Every series of KEY (or --series): exits 1 naming each number unaccounted for (no entry) or
recorded twice, and each Idempotency-Key (of one caller) holding more than one number. A
number being issued meanwhile may show as the last (docs/how-to/invoice-series.md).

examples:
  .venv/bin/python -m tickets_admin audit invoices"""


def _audit(args: argparse.Namespace, context: Context) -> int:
    table, journal, heads = series_heads(args, context)
    if not heads:
        return 1 if args.series else 0
    with table.dynamodb_errors():
        audits = [audit(head, journal.entries(head)) for head in heads]
    print("\n".join(printable(line) for result in audits for line in result.lines()))
    failed = [result for result in audits if not result.clean]
    print(f"audit: {'FAILED' if failed else 'clean'} ({len(audits)} series, {len(failed)} with problems)")
    return 1 if failed else 0


COMMAND = Command("audit", TEXT, _audit, series_arguments)
