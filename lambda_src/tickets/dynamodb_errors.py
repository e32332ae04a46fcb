"""What a failed DynamoDB call means, for every store and tickets_admin (docs/explanation/failures-and-idempotency.md
#failures): throttling, a 5xx or no answer is UNAVAILABLE (503); anything else is raised as it came (a 500)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, cast

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
NO_ANSWER_ERRORS = (ConnectionError, HTTPClientError)


def classify(err: Exception) -> Failure | None:
    """None: not DynamoDB's answer (a bug)."""
    if isinstance(err, NO_ANSWER_ERRORS):
        return Failure.UNAVAILABLE
    if not isinstance(err, ClientError):
        return None
    return classify_code(error_code(err), err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def classify_code(code: str, status: int = 400) -> Failure:
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
    return cast("str", err.response.get("Error", {}).get("Code", ""))


@dataclass(frozen=True)
class UnavailableMessages:
    """A store's 503s: throttled (nothing written), or a 5xx `fault` (default: `throttled`) or no answer."""

    throttled: str
    no_answer: str
    fault: str | None = None

    def of(self, err: Exception) -> str:
        if not isinstance(err, ClientError):
            return self.no_answer
        return self.throttled if error_code(err) in THROTTLING_CODES else self.fault or self.throttled


def call(client: Any, operation: str, request: dict[str, Any], messages: UnavailableMessages) -> dict[str, Any]:
    try:
        return cast("dict[str, Any]", getattr(client, operation)(**request))
    except (ClientError, *NO_ANSWER_ERRORS) as err:
        if classify(err) is not Failure.UNAVAILABLE:
            raise
        raise Unavailable(messages.of(err)) from err


def conditional(
    client: Any, operation: str, request: dict[str, Any], messages: UnavailableMessages
) -> dict[str, Any] | None:
    """`call`, or None when its condition failed (the write changed nothing)."""
    try:
        return call(client, operation, request, messages)
    except ClientError as err:
        if not is_condition_failure(err):
            raise
        return None


def is_condition_failure(err: Exception) -> bool:
    return classify(err) is Failure.CONDITION_FAILED
