"""Warm invocations (bench/README.md, `warm_ratio`): both handlers on real events, DynamoDB answered by botocore's
Stubber, in alternating rounds, every call timed alone and every answer checked."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from botocore.stub import Stubber

from tickets_local.events import event_from

from .environment import EVENT, lambda_context, tickets_app

KEY = "orders"  # configured in cdk.json (start 5000), so Tickets takes its configured-counter path
Rounds = Callable[[int], list[float]]  # a round of that many calls: each call's seconds


def plain_answer(key: str, tickets: range) -> dict[str, Any]:
    """What /{key} answers for these tickets (the baseline answers one ticket the same way)."""
    return {"key": key, "ticket": tickets[0], **({"tickets": list(tickets)} if len(tickets) > 1 else {})}


def stubbed_rounds(handler: Callable, client: Any, *, key=KEY, count=1, answer=plain_answer, lane=True) -> Rounds:
    """`handler` on stubbed UpdateItem answers (`lane`: Tickets' item, else the baseline's); each call asks for
    `count` tickets of `key` and must answer `answer`."""
    stubber = Stubber(client)
    stubber.activate()
    lasts = itertools.count(5000 + count, count)
    query = {"count": str(count)} if count > 1 else None

    def run_round(calls: int) -> list[float]:
        expected = []
        for last in itertools.islice(lasts, calls):  # each answer its own dict: the resource layer rewrites them
            attributes = {"last": {"N": str(last)}, **({"step": {"N": "1"}} if lane else {})}
            stubber.add_response("update_item", {"Attributes": attributes}, expected_params=None)
            expected.append(range(last - count + 1, last + 1))
        invocations = [(event_from(EVENT, f"/{key}", query=query), lambda_context()) for _ in range(calls)]
        results, durations = [], []
        clock = time.perf_counter
        for event, context in invocations:
            started = clock()
            result = handler(event, context)
            durations.append(clock() - started)
            results.append(result)
        stubber.assert_no_pending_responses()
        for result, tickets in zip(results, expected):  # the timed calls must be real successes
            if result["statusCode"] != 200 or json.loads(result["body"]) != answer(key, tickets):
                raise AssertionError(f"a warm call did not issue tickets {tickets}: {result}")
        return durations

    return run_round


def baseline_rounds(key: str = KEY) -> Rounds:
    from . import baseline  # here, not above: it reads the environment when imported

    return stubbed_rounds(baseline.lambda_handler, baseline.table.meta.client, key=key, lane=False)


def tickets_rounds(app: Any = None, **kwargs: Any) -> Rounds:
    app = app or tickets_app()
    return stubbed_rounds(app.lambda_handler, app.dynamodb, **kwargs)


def median_us(rounds: int, variants: dict[str, tuple[Rounds, int]]) -> dict[str, float]:
    """Each variant's round (of its calls) in turn, a warm-up round and then `rounds`: each one's median call in µs."""
    durations: dict[str, list[float]] = {name: [] for name in variants}
    for round_index in range(1 + rounds):
        for name, (run_round, calls) in variants.items():
            measured = run_round(calls)
            if round_index:
                durations[name].extend(measured)
    return {name: 1e6 * statistics.median(measured) for name, measured in durations.items()}


def measure(rounds: int = 40, calls: int = 100) -> dict:
    us = median_us(rounds, {"baseline": (baseline_rounds(), calls), "tickets": (tickets_rounds(), calls)})
    return {"warm_ratio": us["tickets"] / us["baseline"], "warm_us": {**us, "calls_each": rounds * calls}}
