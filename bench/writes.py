"""DynamoDB writes per ticket, counted (not assumed) on moto through the real handlers (bench/README.md): a botocore
hook on each handler's own client counts its calls by operation, and every ticket returned is checked (the right
number, all distinct, increasing from one request to the next)."""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
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
_LANE_SETUP_REQUESTS = 200


class Counted:
    """The DynamoDB API calls one client made, by operation, and the items its writes named."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.items_written: set[str] = set()

    @property
    def writes(self) -> int:
        return sum(n for operation, n in self.calls.items() if operation in WRITE_OPERATIONS)


@contextmanager
def counting(client: Any) -> Iterator[Counted]:
    counted, events, unique_id = Counted(), client.meta.events, f"bench-call-counter-{id(client)}"

    def count(params: dict, model: Any, **_: Any) -> None:
        counted.calls[model.name] += 1
        if model.name in WRITE_OPERATIONS and "Key" in params:
            counted.items_written.add(repr(params["Key"]))

    events.register("before-parameter-build.dynamodb", count, unique_id=unique_id)
    try:
        yield counted
    finally:
        events.unregister("before-parameter-build.dynamodb", unique_id=unique_id)


def _issue(handler: Any, path: str, count: int = 1, requests: int = 1, after: int = 0) -> list[int]:
    """`requests` requests for `count` tickets each; every ticket, checked to increase from `after` on."""
    issued: list[int] = []
    for _ in range(requests):
        query = {"count": str(count)} if count > 1 else None
        result = handler(function_url_event(path, query), lambda_context())
        body = json.loads(result["body"])
        if result["statusCode"] != 200:
            raise AssertionError(f"the handler refused a request: {result['statusCode']} {body}")
        tickets = body.get("tickets", [body["ticket"]])
        if len(tickets) != count or len(set(tickets)) != count:
            raise AssertionError(f"asked for {count} tickets, got {len(tickets)} ({len(set(tickets))} distinct)")
        if tickets[0] <= (issued[-1] if issued else after):
            raise AssertionError(f"{path}: ticket {tickets[0]} came after {issued[-1] if issued else after}")
        issued.extend(tickets)
    return issued


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
            with counting(client) as first:
                opened = _issue(handler, path, count)
            with counting(client) as steady:
                issued = _issue(handler, path, count, requests, after=opened[-1])
            first_request[count] = first.writes
            per_count[count] = steady.writes / len(issued)
            calls[f"tickets count={count}"] = dict(steady.calls)
        sharded = _sharded(handler, client, sharded_requests)
        blocks = _blocks(handler, client)
        baseline_module = importlib.import_module(BASELINE_MODULE)
        with counting(baseline_module.table.meta.client) as baseline:
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


def _sharded(handler: Any, client: Any, requests: int) -> dict:
    """A key with SHARDS lanes: requests until every lane's item exists (their first writes set
    them up), then `requests` single tickets counted in steady state. Lanes interleave, so
    tickets are checked distinct, not increasing."""
    path, lane_item = f"/{SHARDED_KEY}", f"{SHARDED_KEY}#"  # a lane's item; the key's own only records the layout
    with counting(client) as setup:
        issued: list[int] = []
        while len([item for item in setup.items_written if lane_item in item]) < SHARDS:
            if len(issued) == _LANE_SETUP_REQUESTS:
                raise AssertionError(
                    f"{_LANE_SETUP_REQUESTS} requests wrote {len(setup.items_written)} of {SHARDED_KEY}'s {SHARDS} "
                    "lane items"
                )
            issued += _issue(handler, path)
    with counting(client) as steady:
        for _ in range(requests):
            issued += _issue(handler, path)
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
    with counting(client) as counted:
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
