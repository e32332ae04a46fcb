"""The one place that talks to the counter table (docs/explanation/conditions.md): one conditional UpdateItem a request
(lane_item.py builds each), no transactions: a shard is created only after its key's layout is recorded."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from botocore.exceptions import ClientError

from . import dynamodb_errors, lane_item
from .epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, STOPPED
from .errors import ConfigMismatch, TicketsError, Unavailable, exhausted
from .lane_item import LANE, LAST, RAISE_COMMAND, STEP, Item, contradiction, layout_contradiction, missing, number
from .sequence import Lane
from .tables import COUNTER_KEY, FINGERPRINT_PREFIX

_MAY_BE_SPENT = "; no ticket was handed out, but the write may have been applied: its tickets are then a gap. Retry"
_UNAVAILABLE = dynamodb_errors.UnavailableMessages(
    throttled="the counter table is throttled; nothing was issued, retry after the Retry-After delay",
    no_answer=f"the counter table did not answer in time{_MAY_BE_SPENT} after the Retry-After delay",
    fault=f"the counter table failed the request{_MAY_BE_SPENT} after the Retry-After delay",
)
_ATTEMPTS = 3  # the advance, and at most two rounds of creating a shard raced by another request
_UNPROCESSED_BACKOFF_SECONDS = 0.05  # BatchGetItem's retry of unprocessed keys: full jitter, doubled each round


@dataclass
class CounterStore:
    client: Any
    table: str
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def advance(self, lane: Lane, count: int) -> int:
        if lane.limit(count) < lane.seed:
            raise exhausted(lane.key, count, lane.max, lane.step)
        for _ in range(_ATTEMPTS):
            try:
                response = self._call(
                    "update_item",
                    **self._on(lane.item_key),
                    **lane_item.advance(lane, count),
                    ReturnValues="UPDATED_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as err:
                if (created := self._settle(lane, count, self._failed_on(err, lane.item_key))) is not None:
                    return created
            else:
                last = number(response["Attributes"], LAST)
                if last is None or not lane.owns(lane.block(last, count)[0]):
                    raise _off_lane(lane, last)
                return last
        raise Unavailable(f"counter {lane.key!r} is being set up by concurrent requests; retry")

    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]:
        items = self._get([lane.item_key for lane in lanes])
        return {key: {LAST: number(item, LAST), STEP: number(item, STEP)} for key, item in items.items()}

    def _settle(self, lane: Lane, count: int, item: Item | None) -> int | None:
        """After a failed condition, `item` as it was (None: it does not exist): refuse, or create the item."""
        if item is None:
            if lane.shards == 1:
                return None  # deleted since the write failed: the next advance creates it
            # On the key's plain item; refused when another, an incomplete one or an unsharded lane's tickets are there.
            try:
                self._call(
                    "update_item",
                    **self._on(lane.plain_key),
                    **lane_item.record_layout(lane),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as err:
                # No refusal: edited or deleted since. Never go on to the shard's item without the layout recorded.
                raise _refusal(lane, self._failed_on(err, lane.plain_key) or {}, layout=True) or Unavailable(
                    f"counter {lane.key!r} changed while this request set it up; nothing was issued, retry"
                ) from None
            created = lane.seed + count * lane.step  # the shard's item, made with this request's tickets taken
            request = {**self._on(lane.item_key), **lane_item.create(lane, created)}
            written = dynamodb_errors.conditional(self.client, "update_item", request, _UNAVAILABLE)
            return None if written is None else created
        if (refusal := _refusal(lane, item, layout=False)) is not None:
            raise refusal
        last = number(item, LAST)
        if last is None or not lane.accepts_last(last):
            raise _off_lane(lane, last)
        if last > lane.limit(count):
            raise exhausted(lane.key, count, lane.max, lane.step)
        return None  # this lane's item, changed since the condition failed: advance again

    def _failed_on(self, err: ClientError, item_key: str) -> Item | None:
        if not dynamodb_errors.is_condition_failure(err):
            raise err
        if "Item" in err.response:
            return cast("Item", err.response["Item"])
        return self._get([item_key]).get(item_key)

    def _get(self, item_keys: list[str]) -> dict[str, Item]:
        request = {self.table: {"Keys": [{COUNTER_KEY: {"S": key}} for key in item_keys], "ConsistentRead": True}}
        found: dict[str, Item] = {}
        for attempt in range(_ATTEMPTS):
            if attempt:
                self.sleep(self.jitter() * _UNPROCESSED_BACKOFF_SECONDS * 2 ** (attempt - 1))
            response = self._call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self.table, []):
                found[item[COUNTER_KEY]["S"]] = item
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return found
        raise Unavailable("the counter table is throttled; retry after the Retry-After delay")

    def fingerprint(self, version: int, fingerprint: str) -> dict[str, Any]:
        request = {
            **self._on(f"{FINGERPRINT_PREFIX}{version}"),
            "UpdateExpression": "SET fingerprint = if_not_exists(fingerprint, :f)",
            "ExpressionAttributeValues": {":f": {"S": fingerprint}},
            "ReturnValues": "ALL_NEW",
        }
        return cast("dict[str, Any]", self._call("update_item", **request)["Attributes"])

    def _on(self, item_key: str) -> dict[str, Any]:
        return {"TableName": self.table, "Key": {COUNTER_KEY: {"S": item_key}}}

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        return dynamodb_errors.call(self.client, operation, request, _UNAVAILABLE)


_PERMANENT = (
    "start, stride, regionSlots, the region's slot and shards are fixed once a key issued tickets (stride, "
    "regionSlots and shards change only above a fence: docs/how-to/change-a-layout.md): deploy the config "
    "the deployment ledger (tickets.lock.json) records, or move callers to a new key "
    f"and continue it above this one's highest ticket with `{RAISE_COMMAND} NEWKEY --above N`. Nothing "
    "was issued."
)


def _refusal(lane: Lane, item: Item, *, layout: bool) -> TicketsError | None:
    """Why a lane's item (or with `layout`, its key's plain item) refuses it: stopped, another config, not ours."""
    if number(item, STEP) == STOPPED:
        return Unavailable(
            f"counter {lane.key!r}: this layout's lanes were stopped at a fence: a layout change is being deployed, "
            f"or its fence was left unfinished (the operator finishes it with `{FENCE_COMMAND}` or undoes it with "
            f"`{FENCE_UNDO_COMMAND}`: docs/how-to/change-a-layout.md); nothing was issued, retry after the "
            "Retry-After delay"
        )
    if (changed := layout_contradiction(lane, item) if layout else contradiction(lane, item)) is not None:
        return ConfigMismatch(f"counter {changed}; {_PERMANENT}")
    item_key, names = (lane.key, lane_item.layout_of(lane)) if layout else (lane.item_key, LANE)
    if not item or not missing(item, names):
        return None
    last = None if layout else number(item, LAST)
    command = f"{RAISE_COMMAND} {lane.key} --above {'N' if last is None else last}"
    return ConfigMismatch(
        f"counter {item_key!r} lacks {' and '.join(missing(item, names))}: neither the service nor "
        "tickets_admin wrote it (typed in by hand, or left by version 0.1.0), and the service issues only "
        f"from lanes they wrote. `{command}` makes it a lane"
        f"{' (N: the highest ticket the key issued)' if last is None else ''}. Nothing was issued."
    )


def _off_lane(lane: Lane, last: int | None) -> ConfigMismatch:
    fix = (
        f"`{RAISE_COMMAND} {lane.key} --above {last}` puts it back on the lane"
        if last is not None
        else "fix the item's last by hand (a whole number)"
    )
    return ConfigMismatch(
        f"counter {lane.item_key!r} holds last={last!r}, which is not a ticket of this lane "
        f"(first {lane.first}, step {lane.step}): it was edited by hand; {fix}. Nothing was handed out."
    )
