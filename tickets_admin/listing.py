"""A counter table's counters, one row each, read from its items (a Scan), never from cdk.json: what `tickets_admin
list` prints and the local server's GET /_local/counters answers."""

from collections.abc import Callable, Iterable
from typing import Any

from tickets.epochs import SHARD_SEPARATOR, STOPPED, key_and_epoch
from tickets.lane_item import LAST, STEP, Item, number
from tickets.sequence import tickets_left as lane_tickets_left
from tickets.tables import COUNTER_KEY, is_counter_item

COLUMNS = ("key", "lanes", "last", "step")
LEFT_COLUMN = "left"  # with max_of: the tickets the key's lanes here can still issue before max
ISSUED_COLUMN, TIME_LEFT_COLUMN = "issued", "time left"  # with_rates: between two reads, and left at that rate


def counters(items: Iterable[Item], max_of: Callable[[str], int | None] | None = None) -> list[dict[str, Any]]:
    """Per key, sorted: its lanes here, their highest `last`, their step; with `max_of` (a key's max), also `left`."""
    grouped: dict[str, list[Item]] = {}
    for item in items:
        item_key = item[COUNTER_KEY]["S"]
        if is_counter_item(item_key):
            grouped.setdefault(item_key.partition(SHARD_SEPARATOR)[0], []).append(item)
    listed = []
    # orders, orders@1, ..., orders@10, then orders-eu; an item typed in by hand sorts by its name
    for key, key_items in sorted(grouped.items(), key=lambda group: key_and_epoch(group[0])):
        key_items.sort(key=lambda item: str(item[COUNTER_KEY]["S"]))  # the plain item first, then shards
        lanes = [item for item in key_items if LAST in item]
        lasts = [last for item in lanes if (last := number(item, LAST)) is not None]
        steps = [step for item in key_items if (step := number(item, STEP)) is not None]
        row = {"key": key, "lanes": len(lanes), "last": max(lasts, default=None), "step": next(iter(steps), None)}
        if max_of is not None:  # `key@1` is the key's epoch 1: its max is the key's
            row[LEFT_COLUMN] = tickets_left(lanes, max_of(key_and_epoch(key)[0]))
        listed.append(row)
    return listed


def tickets_left(lanes: list[Item], max_: int | None) -> int | None:
    """What these lanes can issue before `max_`; None without a max, or for an item code did not write."""
    if max_ is None:
        return None
    left = 0
    for item in lanes:
        last, step = number(item, LAST), number(item, STEP)
        if last is None or step is None:
            return None
        left += 0 if step == STOPPED else lane_tickets_left(max_, last, step)
    return left


def with_rates(before: list[dict[str, Any]], after: list[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    """`after` with each key's tickets issued since `before` (the fall in `left`) and the time `left` lasts."""
    earlier = {row["key"]: row.get(LEFT_COLUMN) for row in before}
    rated = []
    for row in after:
        left, then = row.get(LEFT_COLUMN), earlier.get(row["key"])
        # A lane created between the reads adds its whole range to `left`: then nothing is told.
        issued = then - left if left is not None and then is not None and then >= left else None
        seconds_left = left * seconds / issued if left is not None and issued else None
        rated.append({**row, ISSUED_COLUMN: issued, TIME_LEFT_COLUMN: seconds_left})
    return rated


def table_lines(listed: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> list[str]:
    rows = [list(columns)] + [[_cell(row, column) for column in columns] for row in listed]
    widths = [max(len(row[index]) for row in rows) for index in range(len(columns))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _cell(row: dict[str, Any], column: str) -> str:
    if row[column] is None:
        return "-"
    if column == "step" and row[column] == STOPPED:
        return "0 (stopped)"
    if column == TIME_LEFT_COLUMN:
        return duration(row[column])
    return str(row[column])


_UNITS = (("years", 31_557_600), ("days", 86_400), ("h", 3_600), ("min", 60))  # a year: 365.25 days


def duration(seconds: float) -> str:
    unit, length = next(((unit, length) for unit, length in _UNITS if seconds >= 2 * length), _UNITS[-1])
    value = seconds / length
    return f"{value:.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"


def scan(client: Any, table: str, **request: Any) -> Iterable[Item]:
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True, **request):
        yield from page.get("Items", [])
