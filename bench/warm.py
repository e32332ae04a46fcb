"""Warm invocations: each handler, already loaded, answers a real Function URL event.

DynamoDB answers through botocore's Stubber on each handler's own client, so a call runs
everything the handler does (routing, validation, logging, metrics, request serialisation,
response parsing and rendering) except the network. Both handlers live in one child
process with one environment, and alternate in rounds (baseline round, Tickets round);
each call is timed on its own, and the figure is the ratio of the median call times.
Runs in a child process (bench.child), whose stdout goes to the null device.
"""

from __future__ import annotations

import importlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from .environment import BASELINE_MODULE, function_url_event, lambda_context, tickets_app

KEY = "orders"  # configured in cdk.json (start 5000), so Tickets takes its configured-counter path
_WARM_UP_ROUNDS = 1


def plain_answer(key: str, tickets: range) -> dict[str, Any]:
    """What /{key} answers for these tickets (the baseline answers one ticket the same way)."""
    return {"key": key, "ticket": tickets[0], **({"tickets": list(tickets)} if len(tickets) > 1 else {})}


class StubbedHandler:
    """A handler whose DynamoDB client answers from a queue of canned UpdateItem responses; each call asks for
    `count` tickets of `key`, and must answer what `answer(key, tickets)` says."""

    def __init__(
        self,
        handler: Callable[[dict, Any], dict],
        client: Any,
        attributes: Callable[[int], dict],
        *,
        key: str = KEY,
        count: int = 1,
        answer: Callable[[str, range], dict[str, Any]] = plain_answer,
    ):
        from botocore.stub import Stubber

        self.handler = handler
        self._stubber = Stubber(client)
        self._stubber.activate()
        self._attributes = attributes
        self._next_last = 5000
        self._key, self._count, self._answer = key, count, answer

    def queue(self, calls: int) -> list[range]:
        """Queue one answer per call (each its own dict: the resource layer rewrites answers in
        place); returns the tickets the calls must hand out."""
        expected = []
        for _ in range(calls):
            self._next_last += self._count
            self._stubber.add_response(
                "update_item", {"Attributes": self._attributes(self._next_last)}, expected_params=None
            )
            expected.append(range(self._next_last - self._count + 1, self._next_last + 1))
        return expected

    def run_round(self, calls: int) -> list[float]:
        expected = self.queue(calls)
        query = {"count": str(self._count)} if self._count > 1 else None
        invocations = [(function_url_event(f"/{self._key}", query), lambda_context()) for _ in range(calls)]
        results, durations = [], []
        clock, handler = time.perf_counter, self.handler
        for event, context in invocations:
            started = clock()
            result = handler(event, context)
            durations.append(clock() - started)
            results.append(result)
        self._stubber.assert_no_pending_responses()
        for result, tickets in zip(results, expected):  # the timed calls must be real successes
            body = json.loads(result["body"])
            if result["statusCode"] != 200 or body != self._answer(self._key, tickets):
                raise AssertionError(f"a warm call did not issue tickets {tickets}: {result}")
        return durations


def measure(rounds: int = 8, calls: int = 500) -> dict:
    """Run in a child process (bench.child): both handlers in one interpreter."""
    from tickets.runtime import logger

    tickets = tickets_app()
    baseline_module = importlib.import_module(BASELINE_MODULE)
    handlers = {
        "baseline": StubbedHandler(
            baseline_module.lambda_handler, baseline_module.table.meta.client, lambda last: {"last": {"N": str(last)}}
        ),
        "tickets": StubbedHandler(
            tickets.lambda_handler, tickets.dynamodb, lambda last: {"last": {"N": str(last)}, "step": {"N": "1"}}
        ),
    }
    # The same Tickets handler with its log level at WARNING (POWERTOOLS_LOG_LEVEL), measured in the same
    # rounds: what INFO logging costs. (The audit of each issuance is in the metrics line, at any level.)
    quiet = {"tickets": "INFO", "tickets_warning_logs": "WARNING"}
    durations: dict[str, list[float]] = {name: [] for name in (*handlers, "tickets_warning_logs")}
    for round_index in range(_WARM_UP_ROUNDS + rounds):
        for name in durations:
            handler = handlers.get(name, handlers["tickets"])
            if name in quiet:
                logger.setLevel(quiet[name])
            measured = handler.run_round(calls)
            if round_index >= _WARM_UP_ROUNDS:
                durations[name].extend(measured)
    logger.setLevel("INFO")
    medians = {name: 1e6 * statistics.median(measured) for name, measured in durations.items()}
    return {
        "warm_ratio": medians["tickets"] / medians["baseline"],
        "warm_ratio_warning_logs": medians["tickets_warning_logs"] / medians["baseline"],
        "warm_us": {
            "tickets": medians["tickets"],
            "baseline": medians["baseline"],
            "tickets_warning_logs": medians["tickets_warning_logs"],
            "calls_each": rounds * calls,
        },
    }
