"""What the commands do, on a CounterTable: `raise_key` and `export_items`.

`raise_key(KEY, above=N)` makes every lane of KEY in one region next issue its smallest ticket
above N, for a restore that rewound `last` or a move from another counter. It never lowers a
lane: each write is conditional on `last` being lower than the new value, so a lane the service
moved past the target meanwhile is left alone and reported. It refuses, before writing anything,
a lane whose stored step, first ticket or shard layout disagrees with the config, and a target
past the counter's max.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from tickets.sequence import Lane
from tickets.store import layout_of
from tickets.tables import COUNTER_KEY, FIRST, LAST, SHARDS, STEP

from .table import AdminError, CounterTable, Item

_ATTEMPTS = 5  # reads and conditional writes per lane before giving up on a lane that keeps changing


class Outcome(Enum):
    RAISED = "raised"
    ALREADY_ABOVE = "already above"
    MOVED_PAST = "moved past the target meanwhile"
    OFF_LANE = "not changed"


@dataclass(frozen=True)
class LaneResult:
    lane: Lane
    outcome: Outcome
    before: int | None  # the stored `last`; None: the lane has issued nothing
    after: int | None
    stored: str | None = None  # the stored `last` as written, when it is not a ticket of the lane

    @property
    def needs_attention(self) -> bool:
        return self.outcome is Outcome.OFF_LANE

    def describe(self) -> str:
        lane, name = self.lane, f"{self.lane.item_key} (lane {self.lane.index})"
        before = "unused" if self.before is None else f"last {self.before}"
        if self.outcome is Outcome.RAISED:
            assert self.after is not None
            return f"{name}: {before} -> last {self.after}; next ticket {self.after + lane.step}"
        if self.outcome is Outcome.ALREADY_ABOVE:
            following = lane.first if self.before is None else self.before + lane.step
            return f"{name}: already above: {before}, next ticket {following}"
        if self.outcome is Outcome.MOVED_PAST:
            return f"{name}: moved past the target meanwhile ({before}); left alone"
        return (
            f"{name}: NOT CHANGED: last {self.stored} is not a ticket of this lane (first {lane.first}, "
            f"step {lane.step}) and is not below the target; the service refuses to issue from it until "
            "the item is fixed by hand"
        )


def next_ticket_above(lane: Lane, above: int) -> int:
    """The lane's smallest ticket greater than `above`."""
    if above < lane.first:
        return lane.first
    return lane.ticket((above - lane.first) // lane.step + 1)


def raise_key(
    table: CounterTable, key: str, lanes: list[Lane], above: int, report: Callable[[str], None] = print
) -> list[LaneResult]:
    """Raise every lane of `key` (this region's `lanes`) so its next ticket is above `above`."""
    targets = {lane.item_key: next_ticket_above(lane, above) for lane in lanes}
    for lane in lanes:
        if targets[lane.item_key] > lane.max:
            raise AdminError(
                f"{lane.item_key}: the lane's next ticket above {above} would be "
                f"{targets[lane.item_key]}, past the counter's max ({lane.max}); raise max in "
                "cdk.json and deploy first. Nothing was written."
            )
    sharded = lanes[0].shards > 1
    layout = table.get(key) if sharded else None
    problems = [
        problem
        for problem in ([_layout_problem(lanes[0], layout)] if sharded else [])
        + [_lane_problem(lane, table.get(lane.item_key)) for lane in lanes]
        if problem
    ]
    if problems:
        raise AdminError("\n".join(problems + ["Nothing was written."]))
    if sharded and not _layout_recorded(lanes[0], layout):
        # Before any shard item is written, as the service does: a request with another shard count
        # then fails on the plain item instead of issuing numbers these lanes own.
        if not table.record_layout(key, lanes[0]):
            raise AdminError(
                _layout_problem(lanes[0], table.get(key))
                or f"{key}: its layout changed meanwhile; run the command again. Nothing was written."
            )
        report(f"{key}: recorded the layout (step {lanes[0].step}, {lanes[0].shards} shards)")
    results = []
    for lane in lanes:
        result = _raise_lane(table, lane, targets[lane.item_key] - lane.step)
        report(result.describe())
        results.append(result)
    return results


def _raise_lane(table: CounterTable, lane: Lane, target_last: int) -> LaneResult:
    raced = False
    for _ in range(_ATTEMPTS):
        item = table.get(lane.item_key)
        problem = _lane_problem(lane, item)
        if problem:
            raise AdminError(f"{problem}\nThe lanes listed above were done; this one and the rest were not.")
        before = _stored(item, LAST)
        if item is not None and LAST in item and before is None:
            return LaneResult(lane, Outcome.OFF_LANE, None, None, stored=json.dumps(item[LAST]))
        if before is not None and before >= target_last:
            if not lane.accepts_last(before):
                return LaneResult(lane, Outcome.OFF_LANE, before, before, stored=str(before))
            return LaneResult(lane, Outcome.MOVED_PAST if raced else Outcome.ALREADY_ABOVE, before, before)
        if before is None and target_last <= lane.seed:
            return LaneResult(lane, Outcome.ALREADY_ABOVE, None, None)  # its first ticket is above the target
        written = table.create_lane(lane, target_last) if item is None else table.raise_last(lane, target_last)
        if written:
            return LaneResult(lane, Outcome.RAISED, before, target_last)
        raced = True  # the service wrote first: read again and see where the lane is now
    raise AdminError(
        f"{lane.item_key}: the item kept changing under {_ATTEMPTS} attempts; run the command again "
        "(it is safe to repeat)"
    )


def _lane_problem(lane: Lane, item: Item | None) -> str | None:
    """Why this stored lane item is not the configured lane, or None."""
    if item is None:
        return None
    step, first = _stored(item, STEP), _stored(item, FIRST)
    if SHARDS in item:
        return (
            f"{lane.item_key}: the item records the layout of {_stored(item, SHARDS)} shards, but the config "
            f"gives {lane.key} {lane.shards} shard(s); shards are permanent once tickets were issued"
        )
    if STEP in item and step != lane.step:
        return (
            f"{lane.item_key}: the item's step is {step}, the config's is {lane.step} (stride x regionSlots x "
            "shards); check --config and --region, or the config changed after tickets were issued"
        )
    if FIRST in item and first != lane.first:
        return (
            f"{lane.item_key}: the item's first ticket is {first}, the config's is {lane.first} (start and the "
            "region's slot); check --config and --region, or the config changed after tickets were issued"
        )
    return None


def _layout_problem(shard_zero: Lane, item: Item | None) -> str | None:
    """Why a sharded key's plain item contradicts the configured layout, or None."""
    if item is None:
        return None
    key = shard_zero.key
    if LAST in item:
        return (
            f"{key}: the plain item issued tickets without shards (last {_stored(item, LAST)}), but the config "
            f"gives {key} {shard_zero.shards} shards; shards are permanent once tickets were issued"
        )
    for name, value in layout_of(shard_zero).items():
        if name in item and _stored(item, name) != value:
            return (
                f"{key}: the plain item records {name} {_stored(item, name)}, the config gives {value}; check "
                "--config and --region, or the config changed after tickets were issued"
            )
    return None


def _layout_recorded(shard_zero: Lane, item: Item | None) -> bool:
    return item is not None and all(name in item for name in layout_of(shard_zero))


def _stored(item: Item | None, name: str) -> int | None:
    """A whole-number attribute, or None if it is missing or not a whole number (a hand-typed 12.5)."""
    value = (item or {}).get(name)
    if not value or "N" not in value:
        return None
    try:
        return int(value["N"])
    except ValueError:
        return None


def export_items(table: CounterTable) -> Iterator[str]:
    """Every item of the table as one JSON object a line, in the order of its `counter`."""
    items = sorted((_plain(item) for item in table.scan()), key=lambda item: str(item.get(COUNTER_KEY)))
    for item in items:
        yield json.dumps(item, sort_keys=True)


def _plain(item: Item) -> dict[str, Any]:
    """Strings and whole numbers as themselves (numbers exactly, however large); anything else in
    DynamoDB's typed form, e.g. {"N": "12.5"}, so nothing is rounded or lost."""
    plain: dict[str, Any] = {}
    for name, value in item.items():
        if "S" in value:
            plain[name] = value["S"]
        elif "N" in value and _stored(item, name) is not None:
            plain[name] = _stored(item, name)
        else:
            plain[name] = value
    return plain
