"""DynamoDB writes per ticket, counted (not assumed) on moto through the real handlers.

A botocore hook on each handler's own client counts every DynamoDB call it makes, by
operation, while the handler answers real Function URL events asking for blocks of
`count` tickets. Every ticket returned is checked: the right number, all distinct,
increasing from one request to the next.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from .environment import (
    BASELINE_MODULE,
    COUNTER_TABLE,
    IDEMPOTENCY_TABLE,
    environment,
    function_url_event,
    handler_env,
    lambda_context,
    tickets_app,
)

COUNTS = (1, 10, 100, 1000)
BLOCK_KEY, BLOCK_REQUESTS = "bench-blocks", 3  # range blocks of the most tickets a request may take
SHARDED_KEY, SHARDS = "bench-sharded", 4  # a sharded counter: still one write per request?
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
SHARD_ITEM_PREFIX = f"{SHARDED_KEY}#"  # a lane's item; the plain key's item only records the layout


class CallCounter:
    """While open, counts the DynamoDB API calls one botocore client makes, and the items its
    UpdateItem/PutItem/DeleteItem calls name."""

    _EVENT = "before-parameter-build.dynamodb"

    def __init__(self, client: Any):
        self.calls: Counter[str] = Counter()
        self.items_written: set[str] = set()
        self._events = client.meta.events
        self._id = f"bench-call-counter-{id(self)}"

    def __enter__(self) -> CallCounter:
        self._events.register(self._EVENT, self._count, unique_id=self._id)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._events.unregister(self._EVENT, unique_id=self._id)

    def _count(self, params: dict, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        if model.name in WRITE_OPERATIONS and "Key" in params:
            self.items_written.add(repr(params["Key"]))

    @property
    def writes(self) -> int:
        return sum(n for operation, n in self.calls.items() if operation in WRITE_OPERATIONS)


def _tickets_of(result: dict, count: int) -> list[int]:
    body = json.loads(result["body"])
    if result["statusCode"] != 200:
        raise AssertionError(f"the handler refused a request: {result['statusCode']} {body}")
    tickets = body.get("tickets", [body["ticket"]])
    if len(tickets) != count or len(set(tickets)) != count:
        raise AssertionError(f"asked for {count} tickets, got {len(tickets)} ({len(set(tickets))} distinct)")
    return tickets


def _issue(handler: Any, path: str, count: int, requests: int, after: int = 0) -> list[int]:
    """`requests` requests for `count` tickets each; every ticket, checked to increase from `after` on."""
    issued: list[int] = []
    for _ in range(requests):
        query = {"count": str(count)} if count > 1 else None
        tickets = _tickets_of(handler(function_url_event(path, query), lambda_context()), count)
        if tickets[0] <= (issued[-1] if issued else after):
            raise AssertionError(f"{path}: ticket {tickets[0]} came after {issued[-1] if issued else after}")
        issued.extend(tickets)
    return issued


def _issue_one(handler: Any, path: str) -> int:
    return _tickets_of(handler(function_url_event(path), lambda_context()), 1)[0]


def _create_tables() -> None:
    import boto3

    from tickets.tables import COUNTER_KEY, IDEMPOTENCY_KEY, create_table_arguments

    client = boto3.client("dynamodb")
    for table, key in ((COUNTER_TABLE, COUNTER_KEY), (IDEMPOTENCY_TABLE, IDEMPOTENCY_KEY)):
        client.create_table(**create_table_arguments(table, key))


def measure(counts: Iterable[int] = COUNTS, requests: int = 20, sharded_requests: int = 40) -> dict:
    """Writes per ticket in steady state, each count on its own counter: the first request, which
    creates the counter's item, is counted apart (`first_request_writes`). All on moto."""
    from moto import mock_aws

    with environment(handler_env({SHARDED_KEY: {"shards": SHARDS}})), mock_aws():
        _create_tables()
        tickets = tickets_app({SHARDED_KEY: {"shards": SHARDS}})
        handler, client = tickets.lambda_handler, tickets.dynamodb
        per_count: dict[int, float] = {}
        first_request: dict[int, int] = {}
        calls: dict[str, dict[str, int]] = {}
        for count in counts:
            path = f"/bench-writes-{count}"
            with CallCounter(client) as first:
                opened = _issue(handler, path, count, 1)
            with CallCounter(client) as steady:
                issued = _issue(handler, path, count, requests, after=opened[-1])
            first_request[count] = first.writes
            per_count[count] = steady.writes / len(issued)
            calls[f"tickets count={count}"] = dict(steady.calls)
        sharded = _sharded(handler, client, sharded_requests)
        blocks = _blocks(handler, client)
        baseline_module = importlib.import_module(BASELINE_MODULE)
        with CallCounter(baseline_module.table.meta.client) as baseline:
            baseline_issued = _issue(baseline_module.lambda_handler, "/bench-writes-baseline", 1, requests)
        calls["baseline"] = dict(baseline.calls)
    return {
        "writes_per_ticket": per_count,
        "first_request_writes": first_request,
        "baseline_writes_per_ticket": baseline.writes / len(baseline_issued),
        "sharded": sharded,
        **blocks,
        "dynamodb_calls": calls,
        "requests_per_count": requests,
    }


_LANE_SETUP_REQUESTS = 200


def _sharded(handler: Any, client: Any, requests: int) -> dict:
    """A key with SHARDS lanes: requests until every lane's item exists (their first writes set
    them up), then `requests` single tickets counted in steady state. Lanes interleave, so
    tickets are checked distinct, not increasing."""
    path = f"/{SHARDED_KEY}"
    with CallCounter(client) as setup:
        issued = []
        while len([item for item in setup.items_written if SHARD_ITEM_PREFIX in item]) < SHARDS:
            if len(issued) == _LANE_SETUP_REQUESTS:
                raise AssertionError(
                    f"{_LANE_SETUP_REQUESTS} requests wrote {len(setup.items_written)} "
                    f"of {SHARDED_KEY}'s {SHARDS} lane items"
                )
            issued.append(_issue_one(handler, path))
    with CallCounter(client) as steady:
        issued += [_issue_one(handler, path) for _ in range(requests)]
    if len(set(issued)) != len(issued):
        raise AssertionError(f"{SHARDED_KEY}: {len(issued) - len(set(issued))} duplicate tickets")
    return {
        "shards": SHARDS,
        "setup_requests": len(issued) - requests,
        "setup_writes": setup.writes,
        "setup_calls": dict(setup.calls),
        "tickets": requests,
        "writes_per_ticket": steady.writes / requests,
        "items_written": len(steady.items_written),
        "calls": dict(steady.calls),
    }


def _blocks(handler: Any, client: Any) -> dict:
    """Range blocks of MAX_BLOCK tickets (/_blocks/{key}), after one that creates the key's item:
    tickets per counted write, each answer checked to continue where the one before ended."""
    from tickets.keys import MAX_BLOCK

    def block() -> dict:
        result = handler(function_url_event(f"/_blocks/{BLOCK_KEY}", {"count": str(MAX_BLOCK)}), lambda_context())
        answer = json.loads(result["body"])
        if (
            result["statusCode"] != 200
            or answer["count"] != MAX_BLOCK
            or answer["last"] != answer["first"] + answer["step"] * (MAX_BLOCK - 1)
        ):
            raise AssertionError(f"a block of {MAX_BLOCK} was not issued: {result}")
        return answer

    after = block()["last"]
    with CallCounter(client) as counted:
        for _ in range(BLOCK_REQUESTS):
            answer = block()
            if answer["first"] != after + answer["step"]:
                raise AssertionError(f"{BLOCK_KEY}: a block began at {answer['first']} after {after}")
            after = answer["last"]
    return {
        "block_tickets_per_write": BLOCK_REQUESTS * MAX_BLOCK / counted.writes,
        "block_count": MAX_BLOCK,
        "block_calls": dict(counted.calls),
    }
