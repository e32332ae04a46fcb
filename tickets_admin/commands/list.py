"""`tickets_admin list`: the counters of this region's table (tickets_admin/listing.py), and their rates."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..cli import whole_number
from ..listing import COLUMNS, ISSUED_COLUMN, LEFT_COLUMN, TIME_LEFT_COLUMN, counters, table_lines, with_rates
from ..registry import Command, Context

DESCRIPTION = """\
Print the counters of this region's table, one a line: the key, how many lanes its items
hold in this region (one per shard), the highest ticket they issued (`last`, - if none),
the step stored on them, and `left`: how many more tickets those lanes can issue before
the key's max in cdk.json (each lane (max - last) / step; - for a key the config does not
serve or an item code did not write; a lane not used yet in this region is not counted).
Read from the table with a consistent, paginated Scan and the operator's credentials (the
function itself may not scan), so it lists every key that was used, configured or not.
`export` prints the items themselves. A key whose layout changed above a fence has a line
per epoch, named as its items (orders, orders@1, ...), oldest first: the lanes of an
earlier epoch were stopped at its fence (step "0 (stopped)", left 0); the last epoch's
lanes are the ones the function issues from.

With --rate-over S it reads the table again S seconds later and adds, per key, the tickets
`issued` in between (every caller's, in this region) and the `time left` at that rate: a
rate measured over those S seconds only, so a burst or a lull moves it; take S long
enough to see many tickets. (The function's CounterDaysLeft metric measures each lane
over 10 minutes or more; its alarm is CounterRunningOut.)"""

EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin list
  .venv/bin/python -m tickets_admin list --rate-over 60          # and each key's time left at the last minute's rate
  .venv/bin/python -m tickets_admin list --region eu-west-1
  .venv/bin/python -m tickets_admin list --endpoint-url http://127.0.0.1:8001   # make serve ENDPOINT_URL=...
  (make serve on its in-process moto: curl http://127.0.0.1:8000/_local/counters)"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rate-over",
        default=0,
        metavar="S",
        type=whole_number,
        help="read the table again S seconds later and show each key's tickets issued in between and its time "
        "left at that rate (default 0: read once, no rate)",
    )


def _list(args: argparse.Namespace, context: Context) -> int:
    table, settings = context.counter_table(), context.settings()

    def read() -> tuple[list[dict[str, Any]], float]:
        """The listing, and the time halfway through the Scan that read it."""
        began = time.monotonic()
        listed = counters(table.scan(), lambda key: None if (counter := settings.counter(key)) is None else counter.max)
        return listed, (began + time.monotonic()) / 2

    listed, read_at = read()
    columns: tuple[str, ...] = (*COLUMNS, LEFT_COLUMN)
    if args.rate_over:
        print(f"reading the table again in {args.rate_over} s, for each key's rate", file=sys.stderr, flush=True)
        time.sleep(args.rate_over)
        later, later_at = read()
        listed, columns = with_rates(listed, later, later_at - read_at), (*columns, ISSUED_COLUMN, TIME_LEFT_COLUMN)
    for line in table_lines(listed, columns):
        print(line)
    return 0


COMMAND = Command(
    "list",
    "print the counters of this region's table: key, lanes, last, step, tickets left (and time left)",
    DESCRIPTION,
    EPILOG,
    _list,
    _arguments,
)
