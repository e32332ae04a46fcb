"""The one place that talks to the series table, without transactions (docs/explanation/series.md, every crash
window): a conditional PutItem takes a number, the mark moves only onto an entry, the request item records its claim."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from .. import dynamodb_errors
from ..errors import Exhausted, IdempotencyKeyReused, NotFound, RequestInProgress, Unavailable
from ..messages import Void
from ..tables import SERIES_PARTITION_KEY, SERIES_SORT_KEY
from .journal import (
    Entry,
    IssueRequest,
    Item,
    RequestItem,
    entries_partition,
    entry_key,
    head_key,
    iso_time,
    request_key,
)

_RETRY = "; retry with the same Idempotency-Key after the Retry-After delay: a number already taken is answered again"
_UNAVAILABLE = dynamodb_errors.UnavailableMessages(
    throttled=f"the series table is throttled or unavailable{_RETRY}, never lost",
    no_answer=f"the series table did not answer in time{_RETRY}, never lost",
)
Issued = tuple[Entry, bool]  # the request's entry, and whether a retry was answered with its first attempt's
CLAIM_ATTEMPTS = 8  # numbers one request tries, each taken meanwhile, before it gives up (its deadline is sooner)
# Past timing.WORST_CASE_CALL_SECONDS after the deadline: once the lock expires nothing of the request can still land.
LOCK_MARGIN_SECONDS = 5.0
_ABSENT = {
    "ConditionExpression": "attribute_not_exists(#pk)",
    "ExpressionAttributeNames": {"#pk": SERIES_PARTITION_KEY},
}


@dataclass
class SeriesStore:
    client: Any
    table: str
    now_millis: Callable[[], int] = lambda: int(time.time() * 1000)
    token: Callable[[], str] = lambda: uuid.uuid4().hex
    marks: dict[tuple[str, str], int] = field(default_factory=dict)  # (key, series) -> its mark as last read

    def issue(self, request: IssueRequest) -> Issued:
        owner = self.token()
        try:
            number = self._next(request, request.series)
        except Exhausted:
            stored = self._stored_request(request)  # replays first: a retry still gets its number
            if stored is None:
                raise
            replay = self._resume(request, stored, owner)
            if not isinstance(replay, Entry):
                self._release(request, owner)
                raise
            return replay, True
        stored = self._create_request(request, owner, number)
        if stored is None:
            return self._take(request, owner, request.series, number, taken_over=False)
        resumed = self._resume(request, stored, owner)
        if isinstance(resumed, Entry):
            return resumed, True
        if resumed is None:
            resumed = self._next(request, stored.series, owner)
            self._update_request(request, owner, "SET claim = :claim", {":claim": {"N": str(resumed)}})
        return self._take(request, owner, stored.series, resumed, taken_over=True)

    def _take(self, request: IssueRequest, owner: str, series: str, number: int, *, taken_over: bool) -> Issued:
        for _ in range(CLAIM_ATTEMPTS):
            entry = Entry(
                key=request.key,
                series=series,
                ticket=number,
                time=iso_time(self.now_millis()),
                caller=request.caller,
                idempotency_key=request.idempotency_key,
                ref=request.ref,
                id=request.config.render_id(request.key, series, number),
            )
            taken = self._write("put_item", Item=entry.to_item(), **_ABSENT) is None  # another entry has the number
            self._raise_mark(request, series, number)  # onto our entry, or onto the one found there
            found = self._own_entry(request, series, number) if taken and taken_over else None
            if not taken or found is not None:
                self.marks[(request.key, series)] = number
                return (entry, False) if found is None else (found, True)
            number = self._next(request, series, owner, fresh=True)  # the mark has moved: read it
            self._update_request(request, owner, "SET claim = :claim", {":claim": {"N": str(number)}})
        raise Unavailable(
            f"series {request.key!r} is busy (each number this request tried was taken meanwhile); "
            "nothing was issued to it, retry with the same Idempotency-Key"
        )

    def void(self, key: str, series: str, number: int, caller: str, reason: str) -> tuple[Entry, bool]:
        void: Void = {"by": caller, "at": iso_time(self.now_millis()), "reason": reason}
        response = self._write(
            "update_item",
            Key=entry_key(key, series, number),
            UpdateExpression="SET voidedBy = :by, voidedAt = :at, voidReason = :reason",
            ConditionExpression="attribute_exists(#pk) AND attribute_not_exists(voidedBy)",
            ExpressionAttributeNames={"#pk": SERIES_PARTITION_KEY},
            ExpressionAttributeValues={":by": {"S": void["by"]}, ":at": {"S": void["at"]}, ":reason": {"S": reason}},
            ReturnValues="ALL_NEW",
        )
        if response is not None:
            return Entry.from_item(response["Attributes"]), True
        entry = self.entry(key, series, number)
        if entry is None:
            raise NotFound(f"series {key!r} has no number {number} in series {series!r}: nothing to void")
        return entry, False

    def entry(self, key: str, series: str, number: int) -> Entry | None:
        response = self._call("get_item", Key=entry_key(key, series, number), ConsistentRead=True)
        return Entry.from_item(response["Item"]) if "Item" in response else None

    def entries_after(self, key: str, series: str, after: int, limit: int) -> Iterator[Entry]:
        """Up to `limit` entries above `after`, in order, a Query at a time (each ends at 1 MB whatever its Limit)."""
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND #n > :after",
            "ExpressionAttributeNames": {"#pk": SERIES_PARTITION_KEY, "#n": SERIES_SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": entries_partition(key, series)}, ":after": {"N": str(after)}},
            "ConsistentRead": True,
        }
        left = limit
        while left > 0:
            response = self._call("query", **query, Limit=left)
            items = response.get("Items", [])
            left -= len(items)
            yield from (Entry.from_item(item) for item in items)
            if "LastEvaluatedKey" not in response:
                return
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def mark(self, key: str, series: str) -> int | None:
        response = self._call("get_item", Key=head_key(key, series), ConsistentRead=True)
        item = response.get("Item")
        return int(item["last"]["N"]) if item and "last" in item else None

    def _next(self, request: IssueRequest, series: str, owner: str | None = None, *, fresh: bool = False) -> int:
        """One above the mark, as last known unless `fresh` (a stale mark costs a failed PutItem)."""
        mark = None if fresh else self.marks.get((request.key, series))
        if mark is None:
            mark = self.mark(request.key, series)
            if mark is not None:
                self.marks[(request.key, series)] = mark
        number = request.config.start if mark is None else mark + 1
        if number > request.config.max:
            if owner is not None:
                self._release(request, owner)
            nxt = "the next period starts again; until then, " if request.config.period else ""
            raise Exhausted(
                f"series {request.key!r} has issued its last number ({request.config.max}) in series {series!r}; "
                f"nothing was issued. Its max is permanent: {nxt}use a new series under a new name, with ids unlike "
                "these (another prefix, or {key}) (docs/reference/series.md)"
            )
        return number

    def _create_request(self, request: IssueRequest, owner: str, number: int) -> RequestItem | None:
        item: Item = {
            **request_key(request.key, request.caller, request.idempotency_key),
            "series": {"S": request.series},
            "owner": {"S": owner},
            "lockedUntil": {"N": str(self._lock_until(request))},
            "claim": {"N": str(number)},
        }
        if request.ref is not None:
            item["ref"] = {"S": request.ref}
        if self._write("put_item", Item=item, **_ABSENT) is not None:
            return None
        stored = self._stored_request(request)
        if stored is None:  # deleted meanwhile by a refused attempt: the next retry starts anew
            raise RequestInProgress(_IN_PROGRESS)
        return stored

    def _stored_request(self, request: IssueRequest) -> RequestItem | None:
        key = request_key(request.key, request.caller, request.idempotency_key)
        item = self._call("get_item", Key=key, ConsistentRead=True).get("Item")
        return None if item is None else RequestItem.from_item(item)

    def _resume(self, request: IssueRequest, stored: RequestItem, owner: str) -> Entry | int | None:
        if stored.ref != request.ref:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was already used for a series number with another ref; "
                "use a new Idempotency-Key for a new document"
            )
        if stored.claim is not None:
            entry = self._own_entry(request, stored.series, stored.claim)
            if entry is not None:
                self._raise_mark(request, stored.series, stored.claim)  # the first attempt may have stopped short
                return entry
        if stored.locked_until > self.now_millis():
            raise RequestInProgress(_IN_PROGRESS)
        before = self._update_request(
            request,
            stored.owner,
            "SET #owner = :owner, lockedUntil = :until",
            {":owner": {"S": owner}, ":until": {"N": str(self._lock_until(request))}},
        )
        return RequestItem.from_item(before).claim

    def _own_entry(self, request: IssueRequest, series: str, number: int) -> Entry | None:
        entry = self.entry(request.key, series, number)
        if entry is not None and (entry.caller, entry.idempotency_key) == (request.caller, request.idempotency_key):
            return entry
        return None

    def _update_request(self, request: IssueRequest, owner: str, update: str, values: Item) -> Item:
        response = self._write(
            "update_item",
            **_held(request, owner),
            UpdateExpression=update,
            ExpressionAttributeValues={**values, ":held": {"S": owner}},
            ReturnValues="ALL_OLD",
        )
        if response is None:
            raise RequestInProgress(_IN_PROGRESS)  # another attempt of the request holds it now
        return cast("Item", response["Attributes"])

    def _release(self, request: IssueRequest, owner: str) -> None:
        """A refused request leaves nothing: its request item goes, so a retry is judged anew."""
        self._write("delete_item", **_held(request, owner), ExpressionAttributeValues={":held": {"S": owner}})

    def _raise_mark(self, request: IssueRequest, series: str, number: int) -> None:
        self._write(  # None: the mark is at or past it already
            "update_item",
            Key=head_key(request.key, series),
            UpdateExpression="SET #last = :n, #key = :key, series = :series, #start = if_not_exists(#start, :start)",
            ConditionExpression="attribute_not_exists(#last) OR #last < :n",
            ExpressionAttributeNames={"#last": "last", "#key": "key", "#start": "start"},
            ExpressionAttributeValues={
                ":n": {"N": str(number)},
                ":key": {"S": request.key},
                ":series": {"S": series},
                ":start": {"N": str(request.config.start)},
            },
        )

    def _lock_until(self, request: IssueRequest) -> int:
        return self.now_millis() + int((request.lock_seconds + LOCK_MARGIN_SECONDS) * 1000)

    def _call(self, operation: str, **call: Any) -> dict[str, Any]:
        return dynamodb_errors.call(self.client, operation, {"TableName": self.table, **call}, _UNAVAILABLE)

    def _write(self, operation: str, **call: Any) -> dict[str, Any] | None:
        return dynamodb_errors.conditional(self.client, operation, {"TableName": self.table, **call}, _UNAVAILABLE)


_IN_PROGRESS = (
    "a request with this Idempotency-Key is still in flight; retry in a moment with the same Idempotency-Key "
    "to get its number"
)


def _held(request: IssueRequest, owner: str) -> dict[str, Any]:
    key = request_key(request.key, request.caller, request.idempotency_key)
    return {"Key": key, "ConditionExpression": "#owner = :held", "ExpressionAttributeNames": {"#owner": "owner"}}
