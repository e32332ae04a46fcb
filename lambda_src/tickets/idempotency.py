"""Idempotent retries (docs/explanation/failures-and-idempotency.md): the record in Powertools' format, so either
release replays the other's, without its jmespath (a third cheaper)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from typing import Any, NoReturn, cast

from botocore.exceptions import ClientError

from .access.rules import caller
from .dynamodb_errors import CONDITION_FAILED_CODE, Failure, classify, error_code
from .errors import IdempotencyKeyReused, RequestInProgress, TicketsError, Unavailable
from .protocol import Asked
from .tables import IDEMPOTENCY_KEY, IDEMPOTENCY_TTL

Issue = Callable[[], dict[str, Any]]  # checks what the config requires, issues, and answers

# Powertools' ids began with the function's name, then the decorated function's module and qualified name.
_ID_PREFIX = ".tickets.idempotency.idempotent.<locals>.issue_once#"
_IN_PROGRESS, _COMPLETED = {"S": "INPROGRESS"}, {"S": "COMPLETED"}
# Free: no record, or an expired one, or a lock whose attempt's deadline passed.
_FREE = (
    "attribute_not_exists(#id) OR #expiry < :now OR "
    "(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"
)
_LOCK: dict[str, Any] = {
    "ConditionExpression": _FREE,
    "ExpressionAttributeNames": {"#id": IDEMPOTENCY_KEY, "#expiry": IDEMPOTENCY_TTL, "#status": "status"}
    | {"#in_progress_expiry": "in_progress_expiration"},
    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
}
# This attempt's own lock, still held: a save or a delete landing after its deadline changes no retry's lock.
_MINE: dict[str, Any] = {
    "ConditionExpression": "#status = :inprogress AND #in_progress_expiry = :mine",
    "ExpressionAttributeNames": {"#status": "status", "#in_progress_expiry": "in_progress_expiration"},
}
_SAVE: dict[str, Any] = {
    "UpdateExpression": "SET #data = :data, #expiry = :expiry, #status = :status, #validation = :validation",
    "ConditionExpression": _MINE["ConditionExpression"],
    "ExpressionAttributeNames": _MINE["ExpressionAttributeNames"]
    | {"#data": "data", "#expiry": IDEMPOTENCY_TTL, "#validation": "validation"},
}


# Made once: OpenSSL looks MD5 up once, and json.dumps(sort_keys=True) makes an encoder per call.
_MD5, _sorted_json = hashlib.md5(usedforsecurity=False), json.JSONEncoder(sort_keys=True).encode


def _hash(data: Any) -> str:
    (digest := _MD5.copy()).update(_sorted_json(data).encode())
    return digest.hexdigest()


def once(
    runtime: Any, event: dict[str, Any], idempotency_key: str, request: Asked | dict[str, Any], issue: Issue
) -> dict[str, Any]:
    """The record locked before the issue runs: what the issue checks never stands between a retry and its answer.
    `runtime`: the request's tickets.runtime.Runtime."""
    prefix = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "test-func") + _ID_PREFIX

    def call(operation: str, spent: bool = False, **request: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = getattr(runtime.client, operation)(TableName=runtime.idempotency_table, **request)
            return answer
        except Exception as err:
            if isinstance(err, ClientError) and error_code(err) == CONDITION_FAILED_CODE:
                raise
            _raise_failure(err, spent=spent, logger=runtime.logger)

    key = {IDEMPOTENCY_KEY: {"S": prefix + _hash([caller(event), idempotency_key])}}
    validation = {"S": _hash(request.recorded if isinstance(request, Asked) else request)}
    now = time.time()
    seconds, millis, left = int(now), int(now * 1000), runtime.deadline.get_remaining_time_in_millis()
    lock = {
        **key,
        IDEMPOTENCY_TTL: {"N": str(seconds + runtime.settings.idempotency_expiry_seconds)},
        "status": _IN_PROGRESS,
    }
    lock |= {"in_progress_expiration": {"N": str(millis + left)}, "validation": validation}
    free = {":now": {"N": str(seconds)}, ":now_in_millis": {"N": str(millis)}, ":inprogress": _IN_PROGRESS}
    try:  # the lock ends at this attempt's deadline: a crashed attempt blocks its key no longer
        call("put_item", Item=lock, ExpressionAttributeValues=free, **_LOCK)
    except ClientError as held:  # dynalite answers a failed condition without the record: read it
        stored = held.response.get("Item") or call("get_item", Key=key, ConsistentRead=True).get("Item")
        if stored is not None and stored.get("validation") != validation:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was already used for a different request (route, key or count); "
                "use a new Idempotency-Key for a new request"
            ) from held
        if stored is None or stored.get("status") != _COMPLETED or "data" not in stored:
            raise RequestInProgress(
                "a request with this Idempotency-Key is still in flight; retry in a moment to get its answer"
            ) from held
        return cast("dict[str, Any]", json.loads(stored["data"]["S"]))
    mine = {":inprogress": _IN_PROGRESS, ":mine": lock["in_progress_expiration"]}
    try:
        answer = issue()
    except Exception:
        with contextlib.suppress(ClientError):  # failed: the lock is a retry's now, not this attempt's to free
            call("delete_item", Key=key, ExpressionAttributeValues=mine, **_MINE)  # the header may be sent again
        raise
    saved = {":data": {"S": _sorted_json(answer)}, ":status": _COMPLETED, ":validation": validation}
    saved[":expiry"] = {"N": str(int(time.time() + runtime.settings.idempotency_expiry_seconds))}
    try:
        call("update_item", True, Key=key, ExpressionAttributeValues=saved | mine, **_SAVE)
    except ClientError as taken:
        raise Unavailable(
            _SPENT.format(why="this attempt outlived its lock") + "The same Idempotency-Key gets the retry's answer"
        ) from taken
    return answer


_REFUSED = "a misconfiguration (a denied role, a missing table) or a bug, logged"
# The issue ran and only its answer's save failed: the tickets are in the counter's `last`, in no answer.
_SPENT = "the tickets were taken, but their answer could not be saved ({why}): they are a gap, handed to no one. "


def _raise_failure(err: Exception, *, spent: bool, logger: Any) -> NoReturn:
    """503 when a retry may pass, else a 500 (dynamodb_errors.classify); each says if the issue took its tickets."""
    transient = isinstance(err, TicketsError) or classify(err) is Failure.UNAVAILABLE
    if transient and spent:
        raise Unavailable(
            _SPENT.format(why="throttled, failed or out of time")
            + "The same Idempotency-Key gets 409 in_progress for seconds, then new tickets"
        ) from err
    if isinstance(err, TicketsError):  # the deadline refused the lock's write (DeadlineBoundClient)
        raise err
    if transient:
        raise Unavailable(
            "the idempotency store is unavailable; nothing was issued. Retry with the same Idempotency-Key "
            "(409 in_progress means: wait and retry)"
        ) from err
    logger.exception("the idempotency table refused a call")
    raise TicketsError(_SPENT.format(why=_REFUSED) if spent else f"nothing was issued: {_REFUSED}") from err
