"""What a lane item is, for the service (store.py) and tickets_admin: its attributes, how a stored item compares with
the configured lane, and every conditional write on one (docs/explanation/conditions.md explains each)."""

from __future__ import annotations

import functools
from typing import Any

from .epochs import STOPPED
from .sequence import Lane
from .tables import COUNTER_KEY

LAST = "last"  # the last ticket issued on the lane
STEP = "step"  # stride * lanes, fixed when the item is created
FIRST = "first"  # the lane's first ticket, fixed when the item is created
SHARDS = "shards"  # on a sharded key's plain item, with its layout
STRIDE = "stride"  # a sharded key's stride (step alone does not tell stride from slots)
STOPPED_STEP = "stoppedStep"  # the step a lane had before a fence stopped it
FENCED_BY = "fencedBy"  # the id of the fence that stopped the lane
FENCE_SEALED = "fenceSealed"  # that fence is being recorded: it can never be undone
LANE = (STEP, FIRST)  # what code writes with every lane item's `last`
RAISE_COMMAND = ".venv/bin/python -m tickets_admin raise"

Item = dict[str, Any]  # as DynamoDB's JSON

_ON_LANE = "#step = :step AND #first = :first AND #last <= :limit"
_ADVANCE_KEY = "SET #last = if_not_exists(#last, :seed) + :inc, #step = :step, #first = :first"
_ADVANCE_KEY_IF = f"attribute_not_exists(#counter) OR (attribute_not_exists(#shards) AND {_ON_LANE})"
_ADVANCE_SHARD = "SET #last = #last + :inc"
_CREATE = "SET #last = :last, #step = :step, #first = :first"
_CREATE_IF = "attribute_not_exists(#counter)"
_RAISE = "SET #last = :last"
_RAISE_IF = "#step = :step AND #first = :first AND #last < :last"
# An item code did not write (no step or first, or a `last` off the lane), if it is still as read.
_PUT_ON_LANE_IF = (
    "{stored} AND (attribute_not_exists(#step) OR #step = :step) AND "
    "(attribute_not_exists(#first) OR #first = :first) AND attribute_not_exists(#shards)"
)
_LAYOUT = "SET #step = :step, #shards = :shards, #first = :first, #stride = :stride"
_LAYOUT_IF = (
    "attribute_not_exists(#counter) OR (#step = :step AND #shards = :shards AND #first = :first AND #stride = :stride)"
)
# tickets_admin only: what is absent is set from the operator's config.
_COMPLETE_LAYOUT_IF = (
    "(attribute_not_exists(#step) OR #step = :step) AND (attribute_not_exists(#shards) OR #shards = :shards) AND "
    "(attribute_not_exists(#first) OR #first = :first) AND (attribute_not_exists(#stride) OR #stride = :stride) "
    "AND attribute_not_exists(#last)"
)
# tickets_admin fence: stop a lane in one write; the lane records its fence (docs/explanation/epochs-and-fences.md).
_STOP = "SET #stopped = #step, #step = :stopped, #fencedBy = :fence"
_STOP_IF = "attribute_exists(#step) AND #step <> :stopped"
# An item with no step (absent: no old version may create it now) is stopped as it is.
_STOP_UNWRITTEN = "SET #step = :stopped, #fencedBy = :fence"
_STOP_UNWRITTEN_IF = "attribute_not_exists(#step)"
_STOPPED_BY = "#step = :stopped AND #fencedBy = :fence"
_SEAL = "SET #sealed = :sealed"
_UNSEALED = f"{_STOPPED_BY} AND attribute_not_exists(#sealed)"
# Undoing a fence never recorded: the lane back to its step, or as it was.
_RESTORE = "SET #step = #stopped REMOVE #stopped, #fencedBy"
_RESTORE_IF = f"{_UNSEALED} AND attribute_exists(#stopped)"
_UNSTOP = "REMOVE #step, #fencedBy"
_UNSTOP_IF = f"{_UNSEALED} AND attribute_not_exists(#stopped)"
# An item the fence itself created is deleted, if it holds nothing else.
_CREATED_BY_STOP = (
    f"{_UNSEALED} AND attribute_not_exists(#stopped) AND attribute_not_exists(#last) AND "
    "attribute_not_exists(#first) AND attribute_not_exists(#shards) AND attribute_not_exists(#stride)"
)
_NAMES = {f"#{name}": name for name in (LAST, STEP, FIRST, SHARDS, STRIDE, FENCED_BY)}
_NAMES |= {"#counter": COUNTER_KEY, "#stopped": STOPPED_STEP, "#sealed": FENCE_SEALED}


def number(item: Item | None, name: str) -> int | None:
    """A whole-number attribute, or None if it is missing or not a whole number (a hand-typed 12.5)."""
    value = (item or {}).get(name)
    if not value or "N" not in value:
        return None
    try:
        return int(value["N"])
    except ValueError:
        return None


def layout_of(lane: Lane) -> dict[str, int]:
    return {STEP: lane.step, SHARDS: lane.shards, FIRST: lane.key_first, STRIDE: lane.stride}


def missing(item: Item, names: tuple[str, ...] | dict[str, int]) -> list[str]:
    return [name for name in names if name not in item]


def contradiction(lane: Lane, item: Item) -> str | None:
    if SHARDS in item:
        return (
            f"{lane.item_key!r} records a layout of {number(item, SHARDS)} shard(s), but the config gives "
            f"{lane.key!r} {lane.shards} shard(s)"
        )
    if STEP in item and number(item, STEP) != lane.step:
        return (
            f"{lane.item_key!r} has step {number(item, STEP)}, but the config gives it step {lane.step} "
            "(stride x regionSlots x shards)"
        )
    if FIRST in item and number(item, FIRST) != lane.first:
        return (
            f"{lane.item_key!r} starts at {number(item, FIRST)}, but the config starts it at {lane.first} "
            "(start and the region's slot)"
        )
    return None


def layout_contradiction(shard_zero: Lane, item: Item) -> str | None:
    key = shard_zero.key
    if LAST in item:
        return (
            f"{key!r} issued tickets up to {number(item, LAST)} without shards, but the config gives it "
            f"{shard_zero.shards} shards"
        )
    for name, value in layout_of(shard_zero).items():
        if name in item and number(item, name) != value:
            return f"{key!r} records {name} {number(item, name)}, but the config gives {value}"
    return None


def advance(lane: Lane, count: int) -> dict[str, Any]:
    """Take the next `count` tickets of the lane's item if they fit (an unsharded key's item is created if absent)."""
    values = {":inc": _n(count * lane.step), ":limit": _n(lane.limit(count)), **_lane_values(lane)}
    if lane.shards == 1:
        values[":seed"] = _n(lane.seed)
        return _request(_ADVANCE_KEY, _ADVANCE_KEY_IF, values)
    return _request(_ADVANCE_SHARD, _ON_LANE, values)


def create(lane: Lane, last: int) -> dict[str, Any]:
    return _request(_CREATE, _CREATE_IF, {":last": _n(last), **_lane_values(lane)})


def record_layout(shard_zero: Lane, condition: str = _LAYOUT_IF) -> dict[str, Any]:
    values = {f":{name}": _n(value) for name, value in layout_of(shard_zero).items()}
    return _request(_LAYOUT, condition, values)


def complete_layout(shard_zero: Lane) -> dict[str, Any]:
    return record_layout(shard_zero, _COMPLETE_LAYOUT_IF)


def raise_last(lane: Lane, last: int) -> dict[str, Any]:
    return _request(_RAISE, _RAISE_IF, {":last": _n(last), **_lane_values(lane)})


def put_on_lane(lane: Lane, old: int | None, last: int) -> dict[str, Any]:
    """Make an item code did not write (or off its lane), whose `last` is `old`, the lane's item, if unchanged."""
    values = {":last": _n(last), **_lane_values(lane)}
    if old is None:
        return _request(_CREATE, _PUT_ON_LANE_IF.format(stored="attribute_not_exists(#last)"), values)
    return _request(_CREATE, _PUT_ON_LANE_IF.format(stored="#last = :old"), {**values, ":old": _n(old)})


def stop(fence: str) -> dict[str, Any]:
    return _request(_STOP, _STOP_IF, _fence_values(fence))


def stop_unwritten(fence: str) -> dict[str, Any]:
    """Stop an item that has no step, created stopped if absent (no older version can create the lane)."""
    return _request(_STOP_UNWRITTEN, _STOP_UNWRITTEN_IF, _fence_values(fence))


def fenced_by(item: Item) -> str | None:
    value = item.get(FENCED_BY)
    return value.get("S") if value and number(item, STEP) == STOPPED else None


def seal(fence: str) -> dict[str, Any]:
    return _request(_SEAL, _STOPPED_BY, {**_fence_values(fence), ":sealed": {"BOOL": True}})


def unstop(fence: str, item: Item) -> dict[str, Any]:
    """Undo `fence` on `item` as read: its step again, or as it was (created by the fence: a DeleteItem's arguments)."""
    if STOPPED_STEP in item:
        return _request(_RESTORE, _RESTORE_IF, _fence_values(fence))
    if set(item) - {COUNTER_KEY, STEP, FENCED_BY}:
        return _request(_UNSTOP, _UNSTOP_IF, _fence_values(fence))
    request = _request("", _CREATED_BY_STOP, _fence_values(fence))
    del request["UpdateExpression"]
    return request


def _fence_values(fence: str) -> dict[str, Any]:
    return {":stopped": _n(STOPPED), ":fence": {"S": fence}}


def _lane_values(lane: Lane) -> dict[str, Any]:
    return {":step": _n(lane.step), ":first": _n(lane.first)}


def _request(update: str, condition: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": dict(_names(update, condition)),
        "ExpressionAttributeValues": values,
    }


@functools.cache  # a handful of expression pairs; advancing a lane asks for one on every request
def _names(update: str, condition: str) -> tuple[tuple[str, str], ...]:
    # Only the names the expressions use: DynamoDB refuses unused ones.
    return tuple((name, value) for name, value in _NAMES.items() if name in update + condition)


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}
