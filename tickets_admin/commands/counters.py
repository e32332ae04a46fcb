import argparse
import json
import sys
import time
from typing import Any

from tickets.lane_item import Item, number
from tickets.tables import COUNTER_KEY, is_counter_item

from ..listing import COLUMNS, ISSUED_COLUMN, LEFT_COLUMN, TIME_LEFT_COLUMN, counters, table_lines, with_rates
from ..registry import Command, Context, whole_number

EXPORT_TEXT = """\
print every counter item as JSON, one object per line

All keys, all lanes, as JSON Lines: one JSON object per line, sorted by `counter`; whole numbers
exact, other values in DynamoDB's form ({"N": "12.5"}); migrate's records left out. After a
fence, each epoch's items (orders, orders@1#0, ...), the earlier stopped (step 0, stoppedStep).

examples:
  .venv/bin/python -m tickets_admin export > counters.jsonl
  .venv/bin/python -m tickets_admin export --region eu-west-1 --table restored-tickets"""


def _export(args: argparse.Namespace, context: Context) -> int:
    items = [item for item in context.counter_table().scan() if is_counter_item(item[COUNTER_KEY]["S"])]
    for item in sorted(items, key=lambda item: str(item[COUNTER_KEY]["S"])):
        print(json.dumps({name: _plain(item, name) for name in item}, sort_keys=True))
    return 0


def _plain(item: Item, name: str) -> Any:
    value = item[name]
    if "S" in value:
        return value["S"]
    whole = number(item, name) if "N" in value else None
    return value if whole is None else whole


LIST_TEXT = """\
print the counters of this region's table: key, lanes, last, step, tickets left (and time left)

A line per key: its lanes here, the highest ticket they issued, their step, and `left` before
its max (- where cdk.json does not serve it); a line per epoch after a fence. --rate-over S adds
the tickets `issued` in S seconds and the `time left` at that rate (docs/reference/monitoring.md).

examples:
  .venv/bin/python -m tickets_admin list
  .venv/bin/python -m tickets_admin list --rate-over 60          # and each key's time left at the last minute's rate"""


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate-over", default=0, metavar="S", type=whole_number, help="read again S seconds later")


def _list(args: argparse.Namespace, context: Context) -> int:
    table, settings = context.counter_table(), context.settings()

    def read() -> tuple[list[dict[str, Any]], float]:
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
    print("\n".join(table_lines(listed, columns)))
    return 0


COMMANDS = (Command("export", EXPORT_TEXT, _export), Command("list", LIST_TEXT, _list, _list_arguments))
