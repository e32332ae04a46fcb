"""How long a request may take: a deadline per request, so a slow table ends in a 503, never a
Lambda timeout (docs/explanation/failures-and-idempotency.md#failures has the reasoning behind each number).

The app's botocore config and the stack's function timeout both come from here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .errors import Unavailable

# One attempt per DynamoDB call: the caller's client is the one layer that retries, so a request's worst case is
# known and no retry of a lost write lands on the request's own idempotency lock.
DYNAMODB_MAX_ATTEMPTS = 1
DYNAMODB_CONNECT_TIMEOUT_SECONDS = 0.5
DYNAMODB_READ_TIMEOUT_SECONDS = 1.0
WORST_CASE_CALL_SECONDS = DYNAMODB_CONNECT_TIMEOUT_SECONDS + DYNAMODB_READ_TIMEOUT_SECONDS
# SSM (access/store.py): one attempt per call within a request's budget (a failed cold start read is tried again in
# a request); at cold start a transient failure is tried again once, after a random pause.
SSM_CONNECT_TIMEOUT_SECONDS = 0.5
SSM_READ_TIMEOUT_SECONDS = 1.0
SSM_COLD_START_ATTEMPTS = 2
SSM_RETRY_PAUSE_SECONDS = 1.0  # at most; uniformly drawn, so a burst's second reads spread out
# What a request may spend: three worst-case calls (an idempotent request's lock, its write, its answer) and room.
REQUEST_BUDGET_SECONDS = 5.0
# Kept back from the function's remaining time for rendering the answer and Powertools' flush.
RENDER_MARGIN_SECONDS = 0.25
# Twice the budget: the deadline, never the timeout, ends a request; this only bounds a hung one.
FUNCTION_TIMEOUT_SECONDS = 10
# A deployment's `timeoutSeconds`: the budget and the render margin fit in it; a hung invocation ends within seconds.
MIN_FUNCTION_TIMEOUT_SECONDS = math.ceil(REQUEST_BUDGET_SECONDS + RENDER_MARGIN_SECONDS)
MAX_FUNCTION_TIMEOUT_SECONDS = 15


class Deadline:
    """When the current request must be answered by: at most REQUEST_BUDGET_SECONDS after it began,
    and RENDER_MARGIN_SECONDS before the function's own time runs out. `start` it per request."""

    def __init__(self) -> None:
        self._at = time.monotonic()  # nothing may start before the first request starts it

    def start(self, lambda_remaining_millis: int) -> None:
        """A request begins, with this much of the function's time left (Lambda's context says)."""
        allowed = min(REQUEST_BUDGET_SECONDS, lambda_remaining_millis / 1000 - RENDER_MARGIN_SECONDS)
        self._at = time.monotonic() + allowed

    def remaining_seconds(self) -> float:
        return self._at - time.monotonic()

    def get_remaining_time_in_millis(self) -> int:
        """The request's time left, as a Lambda context says it: the idempotency lock reads this to
        let a crashed attempt's lock expire at its deadline."""
        return max(0, int(self.remaining_seconds() * 1000))

    def require_time_for_a_call(self) -> None:
        """Refuse to start a DynamoDB call that might not finish before the deadline."""
        if self.remaining_seconds() < WORST_CASE_CALL_SECONDS:
            raise Unavailable(
                "this request ran out of time waiting on DynamoDB; nothing was handed out, "
                "retry after the Retry-After delay"
            )


class DeadlineBoundClient:
    """A DynamoDB client whose every call starts only while it can still finish before the deadline:
    the counter store and the idempotency record both call DynamoDB through it."""

    def __init__(self, client: Any, deadline: Deadline):
        self._client = client
        self._deadline = deadline

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        call: Callable[..., Any] = getattr(self._client, operation)

        def before_the_deadline(**request: Any) -> Any:
            self._deadline.require_time_for_a_call()
            return call(**request)

        return before_the_deadline
