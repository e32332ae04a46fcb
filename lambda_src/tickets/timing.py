"""How long a request may take (docs/explanation/failures-and-idempotency.md#failures): a slow table ends in a 503,
never a Lambda timeout. The botocore config and the function's timeout come from here."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import Unavailable

# One attempt per call: the caller's client is the one layer that retries (no retry lands on the request's own lock).
DYNAMODB_MAX_ATTEMPTS = 1
DYNAMODB_CONNECT_TIMEOUT_SECONDS = 0.5
DYNAMODB_READ_TIMEOUT_SECONDS = 1.0
WORST_CASE_CALL_SECONDS = DYNAMODB_CONNECT_TIMEOUT_SECONDS + DYNAMODB_READ_TIMEOUT_SECONDS
# SSM (access/store.py): at cold start a transient failure is tried again once, after a random pause.
SSM_CONNECT_TIMEOUT_SECONDS = 0.5
SSM_READ_TIMEOUT_SECONDS = 1.0
SSM_COLD_START_ATTEMPTS = 2
SSM_RETRY_PAUSE_SECONDS = 1.0  # at most; uniformly drawn, so a burst's second reads spread out
REQUEST_BUDGET_SECONDS = 5.0  # three worst-case calls (an idempotent request's lock, its write, its answer) and room
RENDER_MARGIN_SECONDS = 0.25  # kept back for rendering the answer and Powertools' flush
FUNCTION_TIMEOUT_SECONDS = 10  # twice the budget: the deadline ends a request; this only bounds a hung one
# A deployment's `timeoutSeconds`: the budget and the render margin fit in it.
MIN_FUNCTION_TIMEOUT_SECONDS = math.ceil(REQUEST_BUDGET_SECONDS + RENDER_MARGIN_SECONDS)
MAX_FUNCTION_TIMEOUT_SECONDS = 15


class Deadline:
    """The current request's: REQUEST_BUDGET_SECONDS, ending RENDER_MARGIN_SECONDS before the function's time."""

    def __init__(self) -> None:
        self._at = time.monotonic()  # nothing may start before the first request starts it

    def start(self, lambda_remaining_millis: int) -> None:
        allowed = min(REQUEST_BUDGET_SECONDS, lambda_remaining_millis / 1000 - RENDER_MARGIN_SECONDS)
        self._at = time.monotonic() + allowed

    def remaining_seconds(self) -> float:
        return self._at - time.monotonic()

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self.remaining_seconds() * 1000))

    def require_time_for_a_call(self) -> None:
        if self.remaining_seconds() < WORST_CASE_CALL_SECONDS:
            raise Unavailable(
                "this request ran out of time waiting on DynamoDB; nothing was handed out, "
                "retry after the Retry-After delay"
            )


@dataclass(frozen=True)
class DeadlineBoundClient:
    client: Any
    deadline: Deadline

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        call: Callable[..., Any] = getattr(self.client, operation)

        def before_the_deadline(**request: Any) -> Any:
            self.deadline.require_time_for_a_call()
            return call(**request)

        return before_the_deadline
