"""Runs a Tickets app's `lambda_handler` one invocation at a time in this process, whichever server receives it, as
Lambda does and the handler relies on (docs/explanation/design.md#the-local-server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aws_lambda_powertools import Metrics

from tickets import timing

from .events import ACCOUNT_ID

FUNCTION_NAME = "tickets-local"
_ONE_INVOCATION_AT_A_TIME = threading.Lock()
T = TypeVar("T")


@dataclass
class LambdaContext:
    """The parts of Lambda's context object that Powertools and the handler read."""

    aws_request_id: str
    invoked_function_arn: str
    function_name: str = FUNCTION_NAME
    memory_limit_in_mb: int = 256
    deadline: float = field(default_factory=lambda: time.monotonic() + timing.FUNCTION_TIMEOUT_SECONDS)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class HandlerInvoker:
    def __init__(
        self, region: str, handler: Callable[[dict[str, Any], Any], Any], catch_up: Callable[[], None] = lambda: None
    ):
        self._arn = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{FUNCTION_NAME}"
        self.handler = handler  # replaced, between invocations, by LocalServer.reset
        self._catch_up = catch_up  # run first under the lock: a reset the test kit marked (reset_mark.py)
        self._metrics = Metrics()  # made after the server set the Powertools environment it reads

    def between_invocations(self, call: Callable[[], T]) -> T:
        """Run `call` (a read of the server's own tables, a reset) while no invocation runs."""
        with _ONE_INVOCATION_AT_A_TIME:
            self._catch_up()
            return call()

    def invoke(self, event: dict[str, Any]) -> Any:
        with _ONE_INVOCATION_AT_A_TIME:
            self._catch_up()
            # The function's clock starts when it runs, as in Lambda, not while queued (that would end in 503s)
            context = LambdaContext(aws_request_id=event["requestContext"]["requestId"], invoked_function_arn=self._arn)
            try:
                return self.handler(event, context)
            finally:
                # With POWERTOOLS_METRICS_DISABLED, Powertools' flush (3.37) keeps the metric set, which grows
                # until it prints itself at 100 values: cleared here, as the flush does in Lambda.
                self._metrics.clear_metrics()
