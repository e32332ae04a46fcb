"""The one place that talks to the counter table.

Each request is one conditional UpdateItem; the condition tells a step mismatch from
exhaustion through ReturnValuesOnConditionCheckFailure, so no read is ever needed
before a write.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from .errors import ConfigMismatch, Exhausted, Unavailable
from .sequence import Lane
from .tables import COUNTER_KEY, LAST, STEP

_ADVANCE = f"SET #last = if_not_exists(#last, :seed) + :inc, #step = if_not_exists(#step, :step)"
# Brand-new items pass; an item with our step passes while the block fits under max; an item
# without a step (made by hand) fails on purpose, so it is checked and adopted below.
_ADVANCE_IF = ("(attribute_not_exists(#step) OR #step = :step) AND "
               "(attribute_not_exists(#last) OR (attribute_exists(#step) AND #last <= :limit))")
_ADOPT = "SET #last = :new, #step = :step"
_ADOPT_IF = "#last = :old AND attribute_not_exists(#step)"
_NAMES = {"#last": LAST, "#step": STEP}

_TRANSIENT_CODES = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "InternalServerError", "ServiceUnavailable", "LimitExceededException",
})
_TRANSIENT_ERRORS = (ConnectTimeoutError, ReadTimeoutError, EndpointConnectionError, ConnectionClosedError)
_ADOPTION_ATTEMPTS = 3


class CounterStore:
    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    def advance(self, lane: Lane, count: int) -> int:
        """Reserve `count` tickets on `lane`; returns the new `last` (the highest ticket of the block)."""
        if lane.limit(count) < lane.seed:
            raise _exhausted(lane, count)
        for _ in range(_ADOPTION_ATTEMPTS):
            try:
                response = self._call("update_item", **self._advance_request(lane, count))
            except ClientError as err:
                if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                self._adopt_or_explain(lane, count, err.response.get("Item") or {})
                continue
            last = _number(response["Attributes"].get(LAST))
            if last is None or not lane.owns(lane.block(last, count)[0]):
                raise _off_lane(lane, last)
            return last
        raise Unavailable(f"counter {lane.key!r} is being adopted by another request; retry")

    def read(self, lane: Lane) -> dict[str, int | None] | None:
        """The lane's stored state, or None if it has never issued a ticket."""
        response = self._call("get_item", TableName=self._table, ConsistentRead=True,
                              Key={COUNTER_KEY: {"S": lane.item_key}})
        item = response.get("Item")
        if item is None:
            return None
        return {LAST: _number(item.get(LAST)), STEP: _number(item.get(STEP))}

    def _advance_request(self, lane: Lane, count: int) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "Key": {COUNTER_KEY: {"S": lane.item_key}},
            "UpdateExpression": _ADVANCE,
            "ConditionExpression": _ADVANCE_IF,
            "ExpressionAttributeNames": _NAMES,
            "ExpressionAttributeValues": {
                ":seed": {"N": str(lane.seed)},
                ":inc": {"N": str(count * lane.step)},
                ":step": {"N": str(lane.step)},
                ":limit": {"N": str(lane.limit(count))},
            },
            "ReturnValues": "UPDATED_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _adopt_or_explain(self, lane: Lane, count: int, item: dict[str, Any]) -> None:
        """Return to retry after adopting a hand-made item; raise when the request must be refused."""
        step, last = _number(item.get(STEP)), _number(item.get(LAST))
        if STEP in item and step != lane.step:
            raise ConfigMismatch(
                f"counter {lane.item_key!r} was created with step {step}, but this deployment "
                f"gives it step {lane.step} (stride x lanes); stride, regionSlots and shards are "
                "permanent once tickets were issued. Nothing was issued.")
        if last is None or not lane.accepts_last(last):
            raise _off_lane(lane, last)
        if last > lane.limit(count):
            raise _exhausted(lane, count)
        if STEP in item:
            return  # our step and room to spare: the item changed under us, so simply try again
        try:
            self._call("update_item", TableName=self._table, Key={COUNTER_KEY: {"S": lane.item_key}},
                       UpdateExpression=_ADOPT, ConditionExpression=_ADOPT_IF,
                       ExpressionAttributeNames=_NAMES,
                       ExpressionAttributeValues={":new": {"N": str(last)}, ":old": {"N": str(last)},
                                                  ":step": {"N": str(lane.step)}})
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # Another request adopted it first; the next advance sees the step.

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        try:
            return getattr(self._client, operation)(**request)
        except ClientError as err:
            if err.response["Error"]["Code"] in _TRANSIENT_CODES:
                raise Unavailable("the counter table is throttled or unavailable; nothing was issued, "
                                  "retry after the Retry-After delay") from err
            raise
        except _TRANSIENT_ERRORS as err:
            raise Unavailable("the counter table did not answer in time; no ticket was handed out, "
                              "retry after the Retry-After delay") from err


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


def _off_lane(lane: Lane, last: int | None) -> ConfigMismatch:
    return ConfigMismatch(
        f"counter {lane.item_key!r} holds last={last!r}, which is not a ticket of this lane "
        f"(first {lane.first}, step {lane.step}); fix the item or the counter's config. "
        "Nothing was handed out.")
