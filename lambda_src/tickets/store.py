"""The one place that talks to the counter table.

A request is one conditional UpdateItem on its lane's item. The condition refuses a
changed lane (its step, or its first ticket: start and region slot) and a block that
would pass max, so nothing is read before a write and a refused request writes nothing.
Where the endpoint returns the item a condition failed on (ReturnValuesOnConditionCheckFailure),
that says why; where it does not (dynalite, for one), one consistent read of that item does.
Only plain UpdateItem and BatchGetItem are used: no transactions, which not every
DynamoDB-compatible endpoint has.

Rare cases take one or two more conditional writes, once per lane item's lifetime:
- an item without `first` (made by hand, with or without `step`) fails the condition on
  purpose: `last` is checked in Python (on the lane? within max? no condition can compute
  a modulo) and the item adopted by a compare-and-set of `step` and `first` on the `last`
  that was checked; a refused item is left as it was;
- a shard's item (`key#s`) is created or adopted only after the key's layout (step, shards,
  stride and the first ticket of shard 0: together they fix every shard's lane) is recorded on
  the plain `key` item.

Why those two writes, layout first, cannot repeat a ticket, whatever runs between them
(docs/design.md has the long form). Tickets are only ever taken from an item by a
conditional write on that item, which DynamoDB applies one at a time, and every item stays
on the lane its `first` and `step` name; lanes of one layout never share a ticket. A repeat
therefore needs items of two layouts in one table, or a shard item and a live plain `key`
item (an unsharded deployment's lane). The layout write sets only what is absent, on the
condition that whatever is present equals it and that the plain item has no `last`; an
unsharded request's write requires the plain item to have no `shards`. So the plain item
records at most one layout, ever, and never both a layout and a `last`; and since every
shard item is written only after its own request's layout write succeeded, all shard items
belong to that one layout and coexist with no unsharded lane. Two requests of the same
layout both record it (the second write changes nothing) and race to create the shard:
`attribute_not_exists` lets one win, the other advances the winner's item. A request with
another shard count, start or slot, or an unsharded one, loses on the plain item, before it
writes any shard item, or finds the shard item's step or first differs. A crash between the
two writes leaves a recorded layout and no shard item: nothing issued, and exactly what the
next request of that layout writes anyway; it refuses only other layouts (for a key that
never issued a ticket, deleting the plain item lifts that). (An item an operator types in
whole, `step` and `first` included, is taken as it stands: this argument covers what the
handler writes.)
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

from .errors import ConfigMismatch, Unavailable, exhausted
from .sequence import Lane
from .tables import COUNTER_KEY, FIRST, LAST, SHARDS, STEP, STRIDE

# The plain `key` item of an unsharded key: a new item passes; an item of this lane passes while
# the block fits. Anything else fails on purpose, to be explained and, if it is a hand-made item on
# the lane, adopted: an item without `first` or `step`, another lane's item, one recording a
# sharded layout (`shards`).
_ADVANCE_KEY = "SET #last = if_not_exists(#last, :seed) + :inc, #step = :step, #first = :first"
_ADVANCE_KEY_IF = (
    "attribute_not_exists(#shards) AND ("
    "(attribute_not_exists(#last) AND attribute_not_exists(#step) AND attribute_not_exists(#first))"
    " OR (#step = :step AND #first = :first AND #last <= :limit))"
)
# A shard's item only ever advances once it exists: creating it must record the key's layout first.
_ADVANCE_SHARD = "SET #last = #last + :inc"
_ADVANCE_SHARD_IF = "#step = :step AND #first = :first AND #last <= :limit"
_ADOPT = "SET #step = :step, #first = :first"
_ADOPT_IF = (
    "#last = :old AND (attribute_not_exists(#step) OR #step = :step) AND "
    "(attribute_not_exists(#first) OR #first = :first)"
)
_CREATE_SHARD = "SET #last = :last, #step = :step, #first = :first"
_CREATE_SHARD_IF = "attribute_not_exists(#counter)"
_RECORD_LAYOUT = (
    "SET #step = if_not_exists(#step, :step), #shards = if_not_exists(#shards, :shards), "
    "#first = if_not_exists(#first, :first), #stride = if_not_exists(#stride, :stride)"
)
# The plain item holds the layout of a sharded key, and must not be a live single lane.
_RECORD_LAYOUT_IF = (
    "(attribute_not_exists(#step) OR #step = :step) AND "
    "(attribute_not_exists(#shards) OR #shards = :shards) AND "
    "(attribute_not_exists(#first) OR #first = :first) AND "
    "(attribute_not_exists(#stride) OR #stride = :stride) AND attribute_not_exists(#last)"
)
_NAMES = {"#last": LAST, "#step": STEP, "#first": FIRST, "#shards": SHARDS}
_LAYOUT_NAMES = {**_NAMES, "#stride": STRIDE}
_LANE_NAMES = {"#last": LAST, "#step": STEP, "#first": FIRST}

_TRANSIENT_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "LimitExceededException",
    }
)
# botocore's bases of every connection failure and timeout it raises (ReadTimeoutError included).
_TRANSIENT_ERRORS = (ConnectionError, HTTPClientError)
_ATTEMPTS = 3  # the advance, and at most two rounds of adopting or creating raced by another request
_CONDITION_FAILED = "ConditionalCheckFailedException"


class CounterStore:
    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    def advance(self, lane: Lane, count: int) -> int:
        """Reserve `count` tickets on `lane`; returns the new `last` (the highest ticket of the block).
        Raises Exhausted only when the lane's `last` is above `lane.limit(count)`."""
        if lane.limit(count) < lane.seed:
            raise exhausted(lane.key, count, lane.max)
        for _ in range(_ATTEMPTS):
            try:
                response = self._call("update_item", **self._advance_request(lane, count))
            except ClientError as err:
                created = self._settle(lane, count, self._failed_on(err, lane.item_key))
                if created is not None:
                    return created
                continue
            last = _number(response["Attributes"].get(LAST))
            if last is None or not lane.owns(lane.block(last, count)[0]):
                raise _off_lane(lane, last)
            return last
        raise Unavailable(f"counter {lane.key!r} is being set up by concurrent requests; retry")

    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]:
        """The stored `last` and `step` of these lanes' items (at most MAX_SHARDS, one BatchGetItem), by
        item key; an item that does not exist is left out."""
        items = self._get([lane.item_key for lane in lanes])
        return {key: {LAST: _number(item.get(LAST)), STEP: _number(item.get(STEP))} for key, item in items.items()}

    def _advance_request(self, lane: Lane, count: int) -> dict[str, Any]:
        values = {
            ":inc": _n(count * lane.step),
            ":step": _n(lane.step),
            ":first": _n(lane.first),
            ":limit": _n(lane.limit(count)),
        }
        if lane.shards == 1:
            update, condition, names = _ADVANCE_KEY, _ADVANCE_KEY_IF, _NAMES
            values[":seed"] = _n(lane.seed)
        else:
            update, condition, names = _ADVANCE_SHARD, _ADVANCE_SHARD_IF, _LANE_NAMES
        return {
            **self._on(lane.item_key),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValues": "UPDATED_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _settle(self, lane: Lane, count: int, item: dict[str, Any] | None) -> int | None:
        """After a failed condition, `item` as it was (None: it does not exist): refuse, or create or
        adopt the item. Returns `last` if creating it issued the block, None to advance again.
        Every refusal is decided before anything is written."""
        if item is None:
            if lane.shards == 1:
                return None  # deleted since the write failed: the next advance creates it
            self._record_layout(lane)
            return self._create_shard(lane, count)
        step, last, first = _number(item.get(STEP)), _number(item.get(LAST)), _number(item.get(FIRST))
        if STEP in item and step != lane.step or SHARDS in item:  # lane items never record shards
            raise _changed_layout(lane, item)
        if FIRST in item and first != lane.first:
            raise _moved_lane(lane, first)
        if last is None or not lane.accepts_last(last):
            raise _off_lane(lane, last)
        if last > lane.limit(count):
            raise exhausted(lane.key, count, lane.max)
        if STEP in item and FIRST in item:
            return None  # this lane's item, changed since the condition failed: advance again
        if lane.shards > 1:
            self._record_layout(lane)
        self._adopt(lane, last)
        return None  # adopted, by us or by a concurrent request: advance again

    def _adopt(self, lane: Lane, last: int) -> None:
        """Give an item checked to be on the lane its `step` and `first`, if its `last` is still the one checked.
        If `last` moved (adopted and advanced by a concurrent request, or edited), the next advance tells."""
        self._write_if(
            lane.item_key,
            UpdateExpression=_ADOPT,
            ConditionExpression=_ADOPT_IF,
            ExpressionAttributeNames=_LANE_NAMES,
            ExpressionAttributeValues={":old": _n(last), ":step": _n(lane.step), ":first": _n(lane.first)},
        )

    def _record_layout(self, lane: Lane) -> None:
        """Record the sharded key's layout on its plain item, or refuse: another layout is recorded
        there, or the plain item is an unsharded lane that issued tickets."""
        try:
            self._call(
                "update_item",
                **self._on(lane.key),
                **layout_update(lane),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as err:
            item = self._failed_on(err, lane.key) or {}
            if LAST in item or any(
                name in item and _number(item[name]) != value for name, value in layout_of(lane).items()
            ):
                raise _changed_layout(lane, item, layout_item=True) from None
            # Nothing on the item explains the failure: it was edited or deleted since. Never go on
            # to the shard's item without the layout recorded.
            raise Unavailable(
                f"counter {lane.key!r} changed while this request set it up; nothing was issued, retry"
            ) from None

    def _create_shard(self, lane: Lane, count: int) -> int | None:
        """Create the shard's item with this block; None if another request created it first (advance again)."""
        last = lane.seed + count * lane.step
        created = self._write_if(
            lane.item_key,
            UpdateExpression=_CREATE_SHARD,
            ConditionExpression=_CREATE_SHARD_IF,
            ExpressionAttributeNames={"#counter": COUNTER_KEY, **_LANE_NAMES},
            ExpressionAttributeValues={":last": _n(last), ":step": _n(lane.step), ":first": _n(lane.first)},
        )
        return last if created else None

    def _write_if(self, item_key: str, **request: Any) -> bool:
        """One conditional UpdateItem on `item_key`; False if its condition failed (nothing was written)."""
        try:
            self._call("update_item", **self._on(item_key), **request)
        except ClientError as err:
            if err.response["Error"]["Code"] != _CONDITION_FAILED:
                raise
            return False
        return True

    def _failed_on(self, err: ClientError, item_key: str) -> dict[str, Any] | None:
        """The item whose condition failed, as it stands (None: it does not exist). Re-raises any
        other error. An endpoint that ignores ReturnValuesOnConditionCheckFailure leaves the item
        out, as DynamoDB does for an item that does not exist: one consistent read tells which."""
        if err.response["Error"]["Code"] != _CONDITION_FAILED:
            raise err
        if "Item" in err.response:
            item: dict[str, Any] = err.response["Item"]
            return item
        return self._get([item_key]).get(item_key)

    def _get(self, item_keys: list[str]) -> dict[str, dict[str, Any]]:
        """These items as stored, by key, from one consistent BatchGetItem (retried for unprocessed keys)."""
        request = {self._table: {"Keys": [{COUNTER_KEY: {"S": key}} for key in item_keys], "ConsistentRead": True}}
        found: dict[str, dict[str, Any]] = {}
        for _ in range(_ATTEMPTS):
            response = self._call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self._table, []):
                found[item[COUNTER_KEY]["S"]] = item
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return found
        raise Unavailable("the counter table is throttled; retry after the Retry-After delay")

    def _on(self, item_key: str) -> dict[str, Any]:
        return {"TableName": self._table, "Key": {COUNTER_KEY: {"S": item_key}}}

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        try:
            response: dict[str, Any] = getattr(self._client, operation)(**request)
            return response
        except ClientError as err:
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            if err.response["Error"]["Code"] in _TRANSIENT_CODES or status >= 500:
                raise Unavailable(
                    "the counter table is throttled or unavailable; nothing was issued, "
                    "retry after the Retry-After delay"
                ) from err
            raise
        except _TRANSIENT_ERRORS as err:
            raise Unavailable(
                "the counter table did not answer in time; no ticket was handed out, retry after the Retry-After delay"
            ) from err


def layout_of(lane: Lane) -> dict[str, int]:
    """What a sharded key's plain item records: together these fix every shard's lane."""
    return {STEP: lane.step, SHARDS: lane.shards, FIRST: lane.key_first, STRIDE: lane.stride}


def layout_update(lane: Lane) -> dict[str, Any]:
    """The conditional UpdateItem (less its table and key) that records `lane`'s key's layout on the
    plain item: the service's and tickets_admin's one way to do it."""
    return {
        "UpdateExpression": _RECORD_LAYOUT,
        "ConditionExpression": _RECORD_LAYOUT_IF,
        "ExpressionAttributeNames": _LAYOUT_NAMES,
        "ExpressionAttributeValues": {f":{name}": _n(value) for name, value in layout_of(lane).items()},
    }


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _number(attribute: dict[str, str] | None) -> int | None:
    if not attribute or "N" not in attribute:
        return None
    try:
        return int(attribute["N"])
    except ValueError:  # a hand-edited fraction such as 12.5
        return None


def _changed_layout(lane: Lane, item: dict[str, Any], *, layout_item: bool = False) -> ConfigMismatch:
    """`item` shows the key's lanes were set up otherwise: it is the lane's own item, or (`layout_item`)
    the plain key item a sharded key's layout is recorded on."""
    step, shards, first, last, stride = (_number(item.get(name)) for name in (STEP, SHARDS, FIRST, LAST, STRIDE))
    if SHARDS in item:
        stored = f"was set up with {shards} shard(s), step {step}, stride {stride}, shard 0 starting at {first}"
    elif layout_item and LAST in item:
        stored = f"issued tickets up to {last} without shards"
    else:
        stored = f"was set up with step {step}"
    return ConfigMismatch(
        f"counter {lane.key!r} {stored}, but this deployment gives it {lane.shards} shard(s), step {lane.step} "
        f"(stride x regionSlots x shards), stride {lane.stride}, shard 0 starting at {lane.key_first}; start, "
        "stride, regionSlots, slots and shards are permanent once tickets were issued. Nothing was issued."
    )


def _moved_lane(lane: Lane, first: int | None) -> ConfigMismatch:
    return ConfigMismatch(
        f"counter {lane.item_key!r} was created as a lane starting at {first}, but this deployment "
        f"starts it at {lane.first} (start or the region's slot changed); start and slots are permanent "
        "once tickets were issued (to skip ahead, raise the item's last by a multiple of its step). "
        "Nothing was issued."
    )


def _off_lane(lane: Lane, last: int | None) -> ConfigMismatch:
    return ConfigMismatch(
        f"counter {lane.item_key!r} holds last={last!r}, which is not a ticket of this lane "
        f"(first {lane.first}, step {lane.step}); fix the item or the counter's config. "
        "Nothing was handed out."
    )
