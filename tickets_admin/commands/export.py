import argparse
import json
from typing import Any

from tickets.lane_item import Item, number
from tickets.tables import COUNTER_KEY, is_counter_item

from ..registry import Command, Context

TEXT = """\
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


COMMANDS = (Command("export", TEXT, _export),)
