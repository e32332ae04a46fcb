"""The counters of a counter table, one line each: what `python -m tickets_admin list` prints and the
local server's GET /_local/counters answers. Read from the table's items (a Scan), never from cdk.json:
it shows what was issued, including keys no config names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tickets.epochs import EPOCH_SEPARATOR, STOPPED
from tickets.lane_item import LAST, STEP, Item, number
from tickets.tables import COUNTER_KEY, is_counter_item

SHARD_SEPARATOR = "#"  # a sharded key's lanes are the items `key#0`, `key#1`, ...; `key@1`: its epoch 1
COLUMNS = ("key", "lanes", "last", "step")


def counters(items: Iterable[Item]) -> list[dict[str, Any]]:
    """Per key, sorted: how many lanes this table holds (an item with a `last`), the highest `last` among
    them (null if none issued), and the step stored on its items (null on an item code did not write).
    The records tickets_admin keeps beside the counters (`migrate`'s targets) are not counters: left out."""
    grouped: dict[str, list[Item]] = {}
    for item in items:
        item_key = item[COUNTER_KEY]["S"]
        if not is_counter_item(item_key):
            continue
        grouped.setdefault(item_key.partition(SHARD_SEPARATOR)[0], []).append(item)
    listed = []
    for key, key_items in sorted(grouped.items(), key=lambda group: _by_key_then_epoch(group[0])):
        key_items.sort(key=lambda item: str(item[COUNTER_KEY]["S"]))  # the plain item first, then shards
        lanes = [item for item in key_items if LAST in item]
        lasts = [last for item in lanes if (last := number(item, LAST)) is not None]
        steps = [step for item in key_items if (step := number(item, STEP)) is not None]
        listed.append(
            {"key": key, "lanes": len(lanes), "last": max(lasts, default=None), "step": next(iter(steps), None)}
        )
    return listed


def _by_key_then_epoch(name: str) -> tuple[str, int]:
    """A key's epochs together, oldest first (`orders`, `orders@1`, ..., `orders@10`), before the next key
    (`orders-eu`: `-` sorts before `@`)."""
    key, _, epoch = name.partition(EPOCH_SEPARATOR)
    return (key, int(epoch)) if epoch.isdigit() else (name, 0)  # not an epoch: an item typed in by hand


def table_lines(listed: list[dict[str, Any]]) -> list[str]:
    """The listing as aligned columns under a header, `-` for null."""
    rows = [list(COLUMNS)] + [[_cell(row, column) for column in COLUMNS] for row in listed]
    widths = [max(len(row[index]) for row in rows) for index in range(len(COLUMNS))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _cell(row: dict[str, Any], column: str) -> str:
    if row[column] is None:
        return "-"
    if column == "step" and row[column] == STOPPED:  # tickets.epochs: an old layout's lanes, stopped at a fence
        return "0 (stopped)"
    return str(row[column])


def scan(client: Any, table: str) -> Iterable[Item]:
    """Every item of `table` through a botocore DynamoDB client, read consistently, page by page."""
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        yield from page.get("Items", [])
