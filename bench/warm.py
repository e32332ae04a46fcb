"""Warm invocations (bench/README.md, `warm_ratio`): both handlers on real events, DynamoDB answered by botocore's
Stubber, in alternating rounds, every call timed alone and every answer checked."""

from __future__ import annotations

import importlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from .environment import BASELINE_MODULE, function_url_event, lambda_context, tickets_app

KEY = "orders"  # configured in cdk.json (start 5000), so Tickets takes its configured-counter path


def plain_answer(key: str, tickets: range) -> dict[str, Any]:
    """What /{key} answers for these tickets (the baseline answers one ticket the same way)."""
    return {"key": key, "ticket": tickets[0], **({"tickets": list(tickets)} if len(tickets) > 1 else {})}


class StubbedHandler:
    """A handler on stubbed UpdateItem answers; each call asks for `count` tickets of `key` and must answer `answer`."""

    def __init__(self, handler: Callable, client: Any, *, key=KEY, count=1, answer=plain_answer, lane=True):
        from botocore.stub import Stubber

        self.handler, self.key, self.count, self.answer, self._lane = handler, key, count, answer, lane
        self._stubber = Stubber(client)
        self._stubber.activate()
        self._next_last = 5000

    @classmethod
    def baseline(cls, key: str = KEY) -> StubbedHandler:
        module = importlib.import_module(BASELINE_MODULE)
        return cls(module.lambda_handler, module.table.meta.client, key=key, lane=False)  # its item: the last ticket

    @classmethod
    def tickets(cls, app: Any = None, **kwargs: Any) -> StubbedHandler:
        app = app or tickets_app()
        return cls(app.lambda_handler, app.dynamodb, **kwargs)

    def queue(self, calls: int) -> list[range]:
        """An answer per call (each its own dict: the resource layer rewrites them); the tickets the calls must give."""
        expected = []
        for _ in range(calls):
            self._next_last += self.count
            attributes = {"last": {"N": str(self._next_last)}, **({"step": {"N": "1"}} if self._lane else {})}
            self._stubber.add_response("update_item", {"Attributes": attributes}, expected_params=None)
            expected.append(range(self._next_last - self.count + 1, self._next_last + 1))
        return expected

    def run_round(self, calls: int) -> list[float]:
        expected = self.queue(calls)
        query = {"count": str(self.count)} if self.count > 1 else None
        invocations = [(function_url_event(f"/{self.key}", query), lambda_context()) for _ in range(calls)]
        results, durations = [], []
        clock, handler = time.perf_counter, self.handler
        for event, context in invocations:
            started = clock()
            result = handler(event, context)
            durations.append(clock() - started)
            results.append(result)
        self._stubber.assert_no_pending_responses()
        for result, tickets in zip(results, expected):  # the timed calls must be real successes
            if result["statusCode"] != 200 or json.loads(result["body"]) != self.answer(self.key, tickets):
                raise AssertionError(f"a warm call did not issue tickets {tickets}: {result}")
        return durations


def median_us(rounds: int, variants: dict[str, Callable[[], list[float]]]) -> dict[str, float]:
    """Each variant's round in turn, one warm-up round and then `rounds`: each variant's median call, in µs."""
    durations: dict[str, list[float]] = {name: [] for name in variants}
    for round_index in range(1 + rounds):
        for name, run_round in variants.items():
            measured = run_round()
            if round_index:
                durations[name].extend(measured)
    return {name: 1e6 * statistics.median(measured) for name, measured in durations.items()}


def measure(rounds: int = 8, calls: int = 500) -> dict:
    baseline, tickets = StubbedHandler.baseline(), StubbedHandler.tickets()
    us = median_us(rounds, {"baseline": lambda: baseline.run_round(calls), "tickets": lambda: tickets.run_round(calls)})
    return {"warm_ratio": us["tickets"] / us["baseline"], "warm_us": {**us, "calls_each": rounds * calls}}
