"""The one place that talks to the counter table.

A request is one conditional UpdateItem on its lane's item. The condition refuses a
changed lane (its step, or its first ticket: start and region slot) and a block that
would pass max, and ReturnValuesOnConditionCheckFailure says which, so nothing is read
before a write and a refused request writes nothing.

Two rare cases take one extra write, once per lane item's lifetime:
- a hand-made item (only `counter` and `last`) is adopted by a compare-and-set that adds
  its step, after checking in Python that `last` sits on the lane (no condition can
  compute a modulo);
- the first write to a shard's item (`key#s`) is a transaction that also records the
  layout on the plain `key` item, so a key that issued tickets with another shard count
  (whose lanes are other items) is refused instead of issuing the same numbers again.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

from .errors import ConfigMismatch, Exhausted, Unavailable
from .sequence import Lane
from .tables import COUNTER_KEY, FIRST, LAST, SHARDS, STEP

# The plain `key` item of an unsharded key: a new item passes; an item with our step passes while
# the block fits; a hand-made item (no step) fails on purpose, to be checked and adopted; an item
# that records a sharded layout (`shards`) fails.
_ADVANCE_KEY = ("SET #last = if_not_exists(#last, :seed) + :inc, #step = if_not_exists(#step, :step), "
                "#first = if_not_exists(#first, :first)")
_ADVANCE_KEY_IF = ("(attribute_not_exists(#step) OR #step = :step) AND "
                   "(attribute_not_exists(#first) OR #first = :first) AND attribute_not_exists(#shards) AND "
                   "(attribute_not_exists(#last) OR (attribute_exists(#step) AND #last <= :limit))")
# A shard's item only ever advances once it exists: creating it must check the key's layout.
_ADVANCE_SHARD = "SET #last = #last + :inc"
_ADVANCE_SHARD_IF = "#step = :step AND #first = :first AND #last <= :limit"
_ADOPT = "SET #step = :step, #first = :first"
_ADOPT_IF = "#last = :old AND attribute_not_exists(#step)"
_CREATE_SHARD = "SET #last = :last, #step = :step, #first = :first"
_CREATE_SHARD_IF = "attribute_not_exists(#counter)"
_RECORD_LAYOUT = "SET #step = if_not_exists(#step, :step), #shards = if_not_exists(#shards, :shards)"
# The plain item holds the layout of a sharded key, and must not be a live single lane.
_RECORD_LAYOUT_IF = ("(attribute_not_exists(#step) OR #step = :step) AND "
                     "(attribute_not_exists(#shards) OR #shards = :shards) AND attribute_not_exists(#last)")
_NAMES = {"#last": LAST, "#step": STEP, "#first": FIRST, "#shards": SHARDS}
_LANE_NAMES = {"#last": LAST, "#step": STEP, "#first": FIRST}
_LAYOUT_NAMES = {"#last": LAST, "#step": STEP, "#shards": SHARDS}

_TRANSIENT_CODES = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "InternalServerError", "ServiceUnavailable", "LimitExceededException",
    "TransactionConflictException", "TransactionInProgressException",
})
# botocore's bases of every connection failure and timeout it raises (ReadTimeoutError included).
_TRANSIENT_ERRORS = (ConnectionError, HTTPClientError)
_ATTEMPTS = 3  # the advance, and at most two rounds of adopting or creating raced by another request


class CounterStore:
    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    def advance(self, lane: Lane, count: int) -> int:
        """Reserve `count` tickets on `lane`; returns the new `last` (the highest ticket of the block)."""
        if lane.limit(count) < lane.seed:
            raise _exhausted(lane, count)
        for _ in range(_ATTEMPTS):
            try:
                response = self._call("update_item", **self._advance_request(lane, count))
            except ClientError as err:
                if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                created = self._settle(lane, count, err.response.get("Item"))
                if created is not None:
                    return created
                continue
            last = _number(response["Attributes"].get(LAST))
            if last is None or not lane.owns(lane.block(last, count)[0]):
                raise _off_lane(lane, last)
            return last
        raise Unavailable(f"counter {lane.key!r} is being set up by concurrent requests; retry")

    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]:
        """The stored state of these lanes' items (at most MAX_SHARDS, one BatchGetItem), by item key;
        an item that does not exist is left out."""
        request = {self._table: {"Keys": [{COUNTER_KEY: {"S": lane.item_key}} for lane in lanes],
                                 "ConsistentRead": True}}
        found: dict[str, dict[str, int | None]] = {}
        for _ in range(_ATTEMPTS):
            response = self._call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self._table, []):
                found[item[COUNTER_KEY]["S"]] = {LAST: _number(item.get(LAST)), STEP: _number(item.get(STEP))}
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return found
        raise Unavailable("the counter table is throttled; retry after the Retry-After delay")

    def _advance_request(self, lane: Lane, count: int) -> dict[str, Any]:
        values = {":inc": _n(count * lane.step), ":step": _n(lane.step), ":first": _n(lane.first),
                  ":limit": _n(lane.limit(count))}
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
        """After a failed condition: refuse, or create/adopt the item. Returns `last` if the
        creation itself issued the block, None to advance again."""
        if item is None:
            return self._create_shard(lane, count)  # only shard items fail the condition by not existing
        step, shards, last = _number(item.get(STEP)), _number(item.get(SHARDS)), _number(item.get(LAST))
        first = _number(item.get(FIRST))
        if STEP in item and step != lane.step or SHARDS in item:  # lane items never record shards
            raise _changed_layout(lane, step, shards)
        if FIRST in item and first != lane.first:
            raise _moved_lane(lane, first)
        if last is None or not lane.accepts_last(last):
            raise _off_lane(lane, last)
        if last > lane.limit(count):
            raise _exhausted(lane, count)
        if STEP not in item:
            self._adopt(lane, last)
        return None  # adopted, or it changed under us: advance again

    def _adopt(self, lane: Lane, last: int) -> None:
        adopt = {**self._on(lane.item_key), "UpdateExpression": _ADOPT, "ConditionExpression": _ADOPT_IF,
                 "ExpressionAttributeNames": _LANE_NAMES,
                 "ExpressionAttributeValues": {":old": _n(last), ":step": _n(lane.step), ":first": _n(lane.first)}}
        if lane.shards == 1:
            try:
                self._call("update_item", **adopt)
            except ClientError as err:
                if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
            return  # adopted, by us or by a concurrent request
        self._transact(lane, adopt)

    def _create_shard(self, lane: Lane, count: int) -> int | None:
        last = lane.seed + count * lane.step
        create = {**self._on(lane.item_key), "UpdateExpression": _CREATE_SHARD,
                  "ConditionExpression": _CREATE_SHARD_IF,
                  "ExpressionAttributeNames": {"#counter": COUNTER_KEY, **_LANE_NAMES},
                  "ExpressionAttributeValues": {":last": _n(last), ":step": _n(lane.step), ":first": _n(lane.first)}}
        return last if self._transact(lane, create) else None

    def _transact(self, lane: Lane, lane_update: dict[str, Any]) -> bool:
        """Apply `lane_update` together with recording the key's layout; False if the lane item
        changed first (a concurrent request won: advance again)."""
        record_layout = {**self._on(lane.key), "UpdateExpression": _RECORD_LAYOUT,
                         "ConditionExpression": _RECORD_LAYOUT_IF, "ExpressionAttributeNames": _LAYOUT_NAMES,
                         "ExpressionAttributeValues": {":step": _n(lane.step), ":shards": _n(lane.shards)},
                         "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        try:
            self._call("transact_write_items", TransactItems=[{"Update": lane_update}, {"Update": record_layout}])
        except ClientError as err:
            if err.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = [reason.get("Code") for reason in err.response.get("CancellationReasons", [])]
            if len(reasons) == 2 and reasons[1] == "ConditionalCheckFailed":
                guard = err.response["CancellationReasons"][1].get("Item", {})
                raise _changed_layout(lane, _number(guard.get(STEP)), _number(guard.get(SHARDS)),
                                      single_lane_last=_number(guard.get(LAST)))
            if reasons and reasons[0] == "ConditionalCheckFailed" or "TransactionConflict" in reasons:
                # Another request created or adopted the lane first, or is recording the same layout
                # on the key item (two new shards at once): advance again.
                return False
            raise Unavailable("the counter table could not apply the write (a conflict or throttling); "
                              "nothing was issued, retry after the Retry-After delay") from err
        return True

    def _on(self, item_key: str) -> dict[str, Any]:
        return {"TableName": self._table, "Key": {COUNTER_KEY: {"S": item_key}}}

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        try:
            return getattr(self._client, operation)(**request)
        except ClientError as err:
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            if err.response["Error"]["Code"] in _TRANSIENT_CODES or status >= 500:
                raise Unavailable("the counter table is throttled or unavailable; nothing was issued, "
                                  "retry after the Retry-After delay") from err
            raise
        except _TRANSIENT_ERRORS as err:
            raise Unavailable("the counter table did not answer in time; no ticket was handed out, "
                              "retry after the Retry-After delay") from err


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _number(attribute: dict[str, str] | None) -> int | None:
    if not attribute or "N" not in attribute:
        return None
    try:
        return int(attribute["N"])
    except ValueError:  # a hand-edited fraction such as 12.5
        return None


def _exhausted(lane: Lane, count: int) -> Exhausted:
    return Exhausted(f"counter {lane.key!r} cannot issue {count} more ticket(s) without passing its "
                     f"max ({lane.max}); raise max in cdk.json, ask for fewer, or use a new key. "
                     "Nothing was issued.")


def _changed_layout(lane: Lane, step: int | None, shards: int | None, single_lane_last: int | None = None
                    ) -> ConfigMismatch:
    if single_lane_last is not None:
        stored = f"issued tickets up to {single_lane_last} without shards"
    else:
        stored = f"was set up with step {step} and {shards or 1} shard(s)"
    return ConfigMismatch(
        f"counter {lane.key!r} {stored}, but this deployment gives it step {lane.step} (stride x "
        f"regionSlots x shards) and {lane.shards} shard(s); stride, regionSlots and shards are permanent "
        "once tickets were issued. Nothing was issued.")


def _moved_lane(lane: Lane, first: int | None) -> ConfigMismatch:
    return ConfigMismatch(
        f"counter {lane.item_key!r} was created as a lane starting at {first}, but this deployment "
        f"starts it at {lane.first} (start or the region's slot changed); start and slots are permanent "
        "once tickets were issued (to skip ahead, raise the item's last by a multiple of its step). "
        "Nothing was issued.")


def _off_lane(lane: Lane, last: int | None) -> ConfigMismatch:
    return ConfigMismatch(
        f"counter {lane.item_key!r} holds last={last!r}, which is not a ticket of this lane "
        f"(first {lane.first}, step {lane.step}); fix the item or the counter's config. "
        "Nothing was handed out.")
