"""The one place that talks to the series table: issue a number with its journal entry, void one,
page a journal. Plain GetItem, PutItem, UpdateItem and Query, no transactions (dynalite has none).

Why no number is ever left without an entry (docs/explanation/series.md has every crash window):
- a number is taken by a conditional PutItem of its entry (attribute_not_exists), so an entry is the
  number and no number is taken twice;
- a request claims `last + 1` only, `last` being the head's high-water mark, and the mark only moves
  onto a number whose entry exists (after this request's PutItem, or after finding it taken);
so the entries are always the numbers start..E, without a hole, with last <= E <= last + 1. A request
that dies anywhere leaves at worst an entry at last + 1, which the next request of the series finds
(its PutItem fails) and moves the mark onto.

The request item records the number a request claims before the entry's PutItem, so a retry with the
same Idempotency-Key finds that entry and answers it, whenever the first attempt stopped; until the
request's lock expires (after its deadline) a retry that finds no entry yet is told 409 in_progress.
After that, a retry takes the lock and first tries the number claimed when it took it: the one number
an attempt paused mid-call may still put an entry for, late (`_resume`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from .. import dynamodb_errors
from ..errors import Exhausted, IdempotencyKeyReused, NotFound, RequestInProgress, Unavailable
from ..messages import Void
from ..tables import SERIES_PARTITION_KEY, SERIES_SORT_KEY
from .journal import (
    Entry,
    IssuedEntry,
    IssueRequest,
    Item,
    RequestItem,
    entries_partition,
    entry_key,
    head_key,
    iso_time,
    request_key,
)

_UNAVAILABLE = dynamodb_errors.UnavailableMessages(
    throttled="the series table is throttled or unavailable; retry with the same Idempotency-Key after "
    "the Retry-After delay: a number already taken is answered again, never lost",
    no_answer="the series table did not answer in time; retry with the same Idempotency-Key after the "
    "Retry-After delay: a number already taken is answered again, never lost",
)
# How many numbers one request tries before it gives up (each taken by a concurrent request meanwhile);
# the request's deadline usually ends it first.
CLAIM_ATTEMPTS = 8
# A request's lock outlasts its deadline by this much: every call of the request started before its
# deadline (timing.DeadlineBoundClient) and ends within timing.WORST_CASE_CALL_SECONDS, so once the lock
# expires nothing of the request can still land and a retry may take its place.
LOCK_MARGIN_SECONDS = 5.0


class SeriesStore:
    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        now_millis: Callable[[], int] = lambda: int(time.time() * 1000),
        token: Callable[[], str] = lambda: uuid.uuid4().hex,
        marks: dict[tuple[str, str], int] | None = None,
    ):
        """`marks`: what this process knows of each series' mark (the store's own by default): a mark the
        head held, with its entry written, so a warm function claims the next number without reading
        the head (docs/explanation/series.md)."""
        self._client = client
        self._table = table_name
        self._now = now_millis
        self._token = token
        self._marks = {} if marks is None else marks

    def issue(self, request: IssueRequest) -> IssuedEntry:
        """One number of the series and its entry; the same entry for every retry of the request.
        Uncontended: GetItem (head; skipped when this process knows the mark), PutItem (request),
        PutItem (entry), UpdateItem (head)."""
        owner = self._token()
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
            return IssuedEntry(replay, replayed=True)
        stored = self._create_request(request, owner, number)
        if stored is None:
            return self._take(request, owner, request.series, number, taken_over=False)
        # A retry: answer its entry, wait for it, or take the expired attempt's place.
        resumed = self._resume(request, stored, owner)
        if isinstance(resumed, Entry):
            return IssuedEntry(resumed, replayed=True)
        if resumed is None:
            resumed = self._next(request, stored.series, owner)
            self._claim(request, owner, resumed)
        # else first the number the attempts before may still be putting an entry for
        return self._take(request, owner, stored.series, resumed, taken_over=True)

    def _take(self, request: IssueRequest, owner: str, series: str, number: int, *, taken_over: bool) -> IssuedEntry:
        """Put the entry of `number`, claimed by the request; while another entry has it, claim the next.
        `taken_over`: the request's lock passed from an earlier attempt, whose entry may land late."""
        for _ in range(CLAIM_ATTEMPTS):
            entry = Entry(
                key=request.key,
                series=series,
                ticket=number,
                time=iso_time(self._now()),
                caller=request.caller,
                idempotency_key=request.idempotency_key,
                ref=request.ref,
                id=request.config.render_id(request.key, series, number),
            )
            taken = not self._put_entry(entry)
            self._raise_mark(request, series, number)  # onto our entry, or onto the one found there
            found = self._own_entry(request, series, number) if taken and taken_over else None
            if not taken or found is not None:
                self._marks[(request.key, series)] = number
                return IssuedEntry(entry, replayed=False) if found is None else IssuedEntry(found, replayed=True)
            number = self._next(request, series, owner, fresh=True)  # the mark has moved: read it
            self._claim(request, owner, number)
        raise Unavailable(
            f"series {request.key!r} is busy (each number this request tried was taken meanwhile); "
            "nothing was issued to it, retry with the same Idempotency-Key"
        )

    def void(self, key: str, series: str, number: int, caller: str, reason: str) -> tuple[Entry, bool]:
        """Record the void on the entry; a void is never undone, so a repeated void answers the first.
        Returns the entry and whether this call voided it (False: voided before)."""
        void: Void = {"by": caller, "at": iso_time(self._now()), "reason": reason}
        try:
            response = self._call(
                "update_item",
                TableName=self._table,
                Key=entry_key(key, series, number),
                UpdateExpression="SET voidedBy = :by, voidedAt = :at, voidReason = :reason",
                ConditionExpression="attribute_exists(#pk) AND attribute_not_exists(voidedBy)",
                ExpressionAttributeNames={"#pk": SERIES_PARTITION_KEY},
                ExpressionAttributeValues={
                    ":by": {"S": void["by"]},
                    ":at": {"S": void["at"]},
                    ":reason": {"S": reason},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as err:
            _require_condition_failure(err)
            entry = self.entry(key, series, number)
            if entry is None:
                raise NotFound(f"series {key!r} has no number {number} in series {series!r}: nothing to void") from None
            return entry, False  # voided before: the first void stands
        return Entry.from_item(response["Attributes"]), True

    def entry(self, key: str, series: str, number: int) -> Entry | None:
        response = self._call(
            "get_item", TableName=self._table, Key=entry_key(key, series, number), ConsistentRead=True
        )
        return Entry.from_item(response["Item"]) if "Item" in response else None

    def page(self, key: str, series: str, after: int, limit: int) -> list[Entry]:
        """Up to `limit` entries of the series with numbers above `after`, in order: fewer than `limit`
        means the journal ends there."""
        return list(self.entries_after(key, series, after, limit))

    def entries_after(self, key: str, series: str, after: int, limit: int) -> Iterator[Entry]:
        """`page`'s entries, read one Query at a time as they are consumed. DynamoDB ends a Query at 1 MB
        whatever its Limit (500 voided entries with long reasons pass it), so a short answer with a
        LastEvaluatedKey is followed on."""
        query: dict[str, Any] = {
            "TableName": self._table,
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
        """The head's high-water mark; None before the series' first number."""
        response = self._call("get_item", TableName=self._table, Key=head_key(key, series), ConsistentRead=True)
        item = response.get("Item")
        return int(item["last"]["N"]) if item and "last" in item else None

    def _next(self, request: IssueRequest, series: str, owner: str | None = None, *, fresh: bool = False) -> int:
        """The number to claim: one above the mark, as this process last knew it unless `fresh` (then,
        or if it knows none, read from the head). Any mark the head once held will do: every number up to
        it has its entry, and a stale one only costs a failed PutItem. Refuses past max (the mark never
        falls back), releasing the request's lock."""
        mark = None if fresh else self._marks.get((request.key, series))
        if mark is None:
            mark = self.mark(request.key, series)
            if mark is not None:
                self._marks[(request.key, series)] = mark
        number = request.config.start if mark is None else mark + 1
        if number > request.config.max:
            if owner is not None:
                self._release(request, owner)
            raise _exhausted(request, series)
        return number

    def _create_request(self, request: IssueRequest, owner: str, number: int) -> RequestItem | None:
        """Record the request and the number it claims; None if new, else the stored request."""
        item: Item = {
            **request_key(request.key, request.caller, request.idempotency_key),
            "series": {"S": request.series},
            "owner": {"S": owner},
            "lockedUntil": {"N": str(self._lock_until(request))},
            "claim": {"N": str(number)},
        }
        if request.ref is not None:
            item["ref"] = {"S": request.ref}
        try:
            self._call(
                "put_item",
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": SERIES_PARTITION_KEY},
            )
        except ClientError as err:
            _require_condition_failure(err)
            stored = self._stored_request(request)
            if stored is None:  # deleted meanwhile by a refused attempt: the next retry starts anew
                raise RequestInProgress(_IN_PROGRESS) from None
            return stored
        return None

    def _stored_request(self, request: IssueRequest) -> RequestItem | None:
        key = request_key(request.key, request.caller, request.idempotency_key)
        item = self._call("get_item", TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return None if item is None else RequestItem.from_item(item)

    def _resume(self, request: IssueRequest, stored: RequestItem, owner: str) -> Entry | int | None:
        """A retry: its first attempt's entry if it exists; else, once that attempt's lock expired,
        take its place and return the number the request claimed as the lock passed (None: no claim).
        409 while the attempt may still be running.

        The lock's expiry does not stop an attempt paused mid-call (its deadline is checked before each
        call): it may still put the entry of the number it claimed last. Only a lock holder records a
        claim, so the claim read atomically with the take-over is the one such number; the new owner
        tries it first, and answers the entry there if it is this request's (docs/explanation/series.md)."""
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
        if stored.locked_until > self._now():
            raise RequestInProgress(_IN_PROGRESS)
        before = self._update_request(
            request,
            stored.owner,
            "SET #owner = :owner, lockedUntil = :until",
            {":owner": {"S": owner}, ":until": {"N": str(self._lock_until(request))}},
        )
        return RequestItem.from_item(before).claim

    def _own_entry(self, request: IssueRequest, series: str, number: int) -> Entry | None:
        """Entry `number` if this request (its caller and Idempotency-Key) holds it."""
        entry = self.entry(request.key, series, number)
        if entry is not None and (entry.caller, entry.idempotency_key) == (request.caller, request.idempotency_key):
            return entry
        return None

    def _claim(self, request: IssueRequest, owner: str, number: int) -> None:
        """Record on the request the number it is about to claim (only while it holds the lock)."""
        self._update_request(request, owner, "SET claim = :claim", {":claim": {"N": str(number)}})

    def _update_request(self, request: IssueRequest, owner: str, update: str, values: Item) -> Item:
        """Update the request item while `owner` holds it; returns the item as it was before."""
        try:
            response = self._call(
                "update_item",
                TableName=self._table,
                Key=request_key(request.key, request.caller, request.idempotency_key),
                UpdateExpression=update,
                ConditionExpression="#owner = :held",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={**values, ":held": {"S": owner}},
                ReturnValues="ALL_OLD",
            )
        except ClientError as err:
            _require_condition_failure(err)
            raise RequestInProgress(_IN_PROGRESS) from None  # another attempt of the request holds it now
        before: Item = response["Attributes"]
        return before

    def _release(self, request: IssueRequest, owner: str) -> None:
        """A refused request leaves nothing: its request item goes, so a retry is judged anew."""
        try:
            self._call(
                "delete_item",
                TableName=self._table,
                Key=request_key(request.key, request.caller, request.idempotency_key),
                ConditionExpression="#owner = :held",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":held": {"S": owner}},
            )
        except ClientError as err:
            _require_condition_failure(err)

    def _put_entry(self, entry: Entry) -> bool:
        """Take the number: True if this entry is now the number's, False if another entry has it."""
        try:
            self._call(
                "put_item",
                TableName=self._table,
                Item=entry.to_item(),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": SERIES_PARTITION_KEY},
            )
        except ClientError as err:
            _require_condition_failure(err)
            return False
        return True

    def _raise_mark(self, request: IssueRequest, series: str, number: int) -> None:
        """Move the head's mark up onto `number`, whose entry exists; never down. The head also says
        the series' key, name and first number, for the audit (tickets_admin audit): the first number as
        the series' first request wrote it, never rewritten from a later config."""
        try:
            self._call(
                "update_item",
                TableName=self._table,
                Key=head_key(request.key, series),
                UpdateExpression=(
                    "SET #last = :n, #key = :key, series = :series, #start = if_not_exists(#start, :start)"
                ),
                ConditionExpression="attribute_not_exists(#last) OR #last < :n",
                ExpressionAttributeNames={"#last": "last", "#key": "key", "#start": "start"},
                ExpressionAttributeValues={
                    ":n": {"N": str(number)},
                    ":key": {"S": request.key},
                    ":series": {"S": series},
                    ":start": {"N": str(request.config.start)},
                },
            )
        except ClientError as err:
            _require_condition_failure(err)  # the mark is at or past it already

    def _lock_until(self, request: IssueRequest) -> int:
        return self._now() + int((request.lock_seconds + LOCK_MARGIN_SECONDS) * 1000)

    def _call(self, operation: str, **call: Any) -> dict[str, Any]:
        """The call; throttling and faults as a 503, a failed condition and a misconfiguration (a 500) raised
        as they came (dynamodb_errors: the counter store's answers, code for code)."""
        return dynamodb_errors.call(self._client, operation, call, _UNAVAILABLE)


_IN_PROGRESS = (
    "a request with this Idempotency-Key is still in flight; retry in a moment with the same Idempotency-Key "
    "to get its number"
)


def _require_condition_failure(err: ClientError) -> None:
    if not dynamodb_errors.is_condition_failure(err):
        raise err


def _exhausted(request: IssueRequest, series: str) -> Exhausted:
    nxt = "the next period starts again; until then, " if request.config.period else ""
    return Exhausted(
        f"series {request.key!r} has issued its last number ({request.config.max}) in series {series!r}; nothing "
        f"was issued. Its max is permanent: {nxt}use a new series under a new name, with ids unlike these "
        "(another prefix, or {key}) (docs/reference/series.md)"
    )
