"""What a failed DynamoDB call means, decided once for every caller: the counter store (store.py),
the series store (series/store.py) and the operator's commands (tickets_admin).

- `CONDITION_FAILED`: the request's condition was false; the caller's own logic decides.
- `UNAVAILABLE`: throttling, a service fault (any 5xx) or no answer in time (a connection error or
  timeout). Nothing was written that the caller cannot see again: the function answers 503
  `unavailable` with Retry-After; a command says to run it again.
- `MISSING_TABLE`, `ACCESS_DENIED`, `INVALID_REQUEST`: a misconfiguration (the table is not there, the
  role may not use it, a request DynamoDB refuses). Retrying does not help: the function lets the
  error through to its 500 `internal_error` (logged with the error, counted by the InternalErrors
  alarm; docs/operations.md), and a command names what to check.

Only botocore's exception shape is read: `ClientError.response["Error"]["Code"]` and the HTTP status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

from .errors import Unavailable


class Failure(enum.Enum):
    CONDITION_FAILED = "condition_failed"
    UNAVAILABLE = "unavailable"
    MISSING_TABLE = "missing_table"
    ACCESS_DENIED = "access_denied"
    INVALID_REQUEST = "invalid_request"


CONDITION_FAILED_CODE = "ConditionalCheckFailedException"
THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "LimitExceededException"}
)
SERVICE_FAULT_CODES = frozenset({"InternalServerError", "ServiceUnavailable"})
ACCESS_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied", "UnrecognizedClientException"})
MISSING_TABLE_CODE = "ResourceNotFoundException"
# botocore's bases of every connection failure and timeout it raises (ReadTimeoutError included).
NO_ANSWER_ERRORS = (ConnectionError, HTTPClientError)


def classify(err: Exception) -> Failure | None:
    """The meaning of `err` raised by a DynamoDB call; None for an exception that is not DynamoDB's
    answer (a bug: the caller lets it through)."""
    if isinstance(err, NO_ANSWER_ERRORS):
        return Failure.UNAVAILABLE
    if not isinstance(err, ClientError):
        return None
    return classify_code(error_code(err), _status(err.response))


def classify_code(code: str, status: int = 400) -> Failure:
    """The meaning of an error code (and the HTTP status it came with)."""
    if code == CONDITION_FAILED_CODE:
        return Failure.CONDITION_FAILED
    if code in THROTTLING_CODES or code in SERVICE_FAULT_CODES or status >= 500:
        return Failure.UNAVAILABLE
    if code in ACCESS_DENIED_CODES:
        return Failure.ACCESS_DENIED
    if code == MISSING_TABLE_CODE:
        return Failure.MISSING_TABLE
    return Failure.INVALID_REQUEST


def error_code(err: ClientError) -> str:
    code: str = err.response.get("Error", {}).get("Code", "")
    return code


@dataclass(frozen=True)
class UnavailableMessages:
    """What a store's 503 says: when DynamoDB answered with throttling or a fault, and when it did not answer."""

    throttled: str
    no_answer: str


def call(client: Any, operation: str, request: dict[str, Any], messages: UnavailableMessages) -> dict[str, Any]:
    """One DynamoDB call; `UNAVAILABLE` raised as a 503 (errors.Unavailable) with the store's message.
    Every other failure is raised as it came: a failed condition for the caller to read, a
    misconfiguration to end as the function's 500."""
    try:
        response: dict[str, Any] = getattr(client, operation)(**request)
        return response
    except (ClientError, *NO_ANSWER_ERRORS) as err:
        if classify(err) is not Failure.UNAVAILABLE:
            raise
        raise Unavailable(messages.no_answer if isinstance(err, NO_ANSWER_ERRORS) else messages.throttled) from err


def is_condition_failure(err: Exception) -> bool:
    return classify(err) is Failure.CONDITION_FAILED


def _status(response: dict[str, Any]) -> int:
    status: int = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    return status
