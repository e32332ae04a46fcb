"""The request deadline (timing.py, docs/explanation/failures-and-idempotency.md#failures): no DynamoDB call starts
unless it can finish before the deadline, so a slow table ends in a 503 with Retry-After before the function's time
runs out; a fast table serves a request however many calls its path takes."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass

import pytest
from botocore.exceptions import ClientError

from moto_deployment import COUNTER_TABLE, IDEMPOTENCY_TABLE, FakeLambdaContext, function_client, function_url_event
from tickets import timing
from tickets.app import create_app, dynamodb_client
from tickets.settings import CounterConfig, Settings

SHARDED = {"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 4, "max": 20}}}


class Clock:
    """timing.py's clock, moved only by the table's calls: the test decides how long each takes."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@dataclass
class Context(FakeLambdaContext):
    remaining_millis: int = 10_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def answer(result: dict) -> tuple[int, dict, dict]:
    return result["statusCode"], result.get("headers") or {}, json.loads(result["body"])


def on_a_slow_table(api, monkeypatch, event: dict, remaining_millis: int) -> tuple[int, dict, dict, list, float]:
    """One request to `api`, each of whose DynamoDB calls takes 1.4 s of timing.py's clock (just inside
    the timeouts) and then answers: (status, headers, body, the calls made, the seconds it took)."""
    clock, calls = Clock(), []
    monkeypatch.setattr(timing, "time", clock)

    def take_time(model, **_):
        calls.append(model.name)
        clock.now += 1.4

    events = api.handler.dynamodb.meta.events
    events.register_first("before-call.dynamodb", take_time)
    try:
        result = api.handler.lambda_handler(event, Context(remaining_millis=remaining_millis))
    finally:
        events.unregister("before-call.dynamodb", take_time)
    return (*answer(result), calls, clock.now - 1000.0)


def test_a_slow_table_ends_in_a_503_before_the_request_budget(deploy, monkeypatch):
    """The first request of a sharded key, with an Idempotency-Key, needs the lock, the advance, the
    read that tells why it failed (no item yet), the layout, the shard's creation and the saved answer:
    after three 1.4 s calls too little time is left for a fourth, so it answers 503 at 4.2 s of its 5 s."""
    event = function_url_event("/hot", headers={"idempotency-key": "slow"})
    status, headers, body, calls, took = on_a_slow_table(deploy(SHARDED), monkeypatch, event, 10_000)
    assert (status, body["error"]) == (503, "unavailable") and int(headers["Retry-After"]) >= 1
    assert calls == ["PutItem", "UpdateItem", "BatchGetItem"]
    assert took == pytest.approx(4.2) and took <= timing.REQUEST_BUDGET_SECONDS
    assert took + timing.WORST_CASE_CALL_SECONDS > timing.REQUEST_BUDGET_SECONDS  # no room for a fourth


def test_the_functions_remaining_time_caps_the_deadline(deploy, monkeypatch):
    """With 3 s of the function left, the deadline is 2.75 s away: after one 1.4 s call no other
    starts, and the 503 comes well before Lambda would time the function out."""
    status, headers, body, calls, took = on_a_slow_table(
        deploy(SHARDED), monkeypatch, function_url_event("/hot"), 3_000
    )
    assert (status, body["error"], headers["Retry-After"]) == (503, "unavailable", "1")
    assert calls == ["UpdateItem"] and took == pytest.approx(1.4)
    assert took < 3.0 - timing.RENDER_MARGIN_SECONDS


class RacingTable:
    """The function's client, answering as dynalite does (a failed condition comes back without the
    item), with shard 0 throttled, and concurrent requests of other functions landing just before two
    of this request's writes: one spends shard 2, one creates shard 3."""

    def __init__(self, client, before_write):
        self._client = client
        self._before_write = before_write
        self.calls: list[str] = []

    def update_item(self, **request):
        if request["TableName"] != COUNTER_TABLE:  # the idempotency record
            return self._client.update_item(**request)
        item = request["Key"]["counter"]["S"]
        self.calls.append(f"UpdateItem {item}")
        if item == "hot#0":
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}}, "x")
        self._before_write(item, request)
        try:
            return self._client.update_item(**request)
        except ClientError as err:
            err.response.pop("Item", None)
            raise

    def batch_get_item(self, **request):
        self.calls.append("BatchGetItem")
        return self._client.batch_get_item(**request)

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_the_longest_path_on_a_fast_table_is_served(deploy):
    """Every step legitimate, more calls than the old budget of 9 allowed: shard 0 throttled (1);
    shard 1 spent, read to learn why (2), then every lane surveyed (1); shard 2 spent by a concurrent
    request just before this one's write (2); shard 3 missing: the read, the layout, the creation lost
    to a concurrent request, the advance (5). With the Idempotency-Key's lock and answer: 13 calls."""
    deploy(SHARDED)  # the tables
    settings = Settings(counters={"hot": CounterConfig(start=1, shards=4, max=20)})
    others = {  # concurrent requests of other functions, each pinned to one shard, on the same table
        shard: create_app(
            settings,
            function_client("us-east-1"),
            COUNTER_TABLE,
            IDEMPOTENCY_TABLE,
            shuffle=lambda lanes, shard=shard: lanes.sort(key=lambda lane: lane.shard != shard),
        )
        for shard in (1, 2, 3)
    }

    def concurrent(shard: int, count: int) -> None:
        result = others[shard].lambda_handler(function_url_event("/hot", query={"count": str(count)}), Context())
        assert result["statusCode"] == 200, result

    concurrent(1, 5)  # shard 1 (2, 6, ..., 18) spent before this request starts
    landed = set()

    def before_write(item: str, request: dict) -> None:
        if item == "hot#2" and item not in landed:
            landed.add(item)
            concurrent(2, 5)  # shard 2 (3, 7, ..., 19) spent between the survey and this write
        if item == "hot#3" and "attribute_not_exists" in request.get("ConditionExpression", "") and item not in landed:
            landed.add(item)
            concurrent(3, 1)  # shard 3 created with ticket 4, just before this request creates it

    table = RacingTable(function_client("us-east-1"), before_write)
    app = create_app(
        settings, table, COUNTER_TABLE, IDEMPOTENCY_TABLE, shuffle=lambda lanes: lanes.sort(key=lambda lane: lane.shard)
    )
    status, _, body = answer(
        app.lambda_handler(function_url_event("/hot", headers={"idempotency-key": "long"}), Context())
    )
    assert (status, body) == (200, {"key": "hot", "ticket": 8}), body  # shard 3: 4 (the other request's), 8
    assert table.calls == [
        "UpdateItem hot#0",
        "UpdateItem hot#1",
        "BatchGetItem",  # why shard 1 refused
        "BatchGetItem",  # the survey
        "UpdateItem hot#2",
        "BatchGetItem",
        "UpdateItem hot#3",
        "BatchGetItem",
        "UpdateItem hot",  # the layout
        "UpdateItem hot#3",  # the creation, lost
        "UpdateItem hot#3",
    ]
    assert len(table.calls) > 9


def test_a_table_that_never_answers_is_a_503_within_the_timeouts(deploy):
    """Real sockets: an endpoint that accepts connections and never answers. botocore's read timeout
    ends the one attempt; the caller gets its 503 long before the deadline, never a Lambda timeout."""
    api = deploy()
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        client = dynamodb_client(region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{port}")
        app = create_app(api.settings, client, COUNTER_TABLE, IDEMPOTENCY_TABLE)
        started = time.monotonic()
        status, headers, body = answer(
            app.lambda_handler(function_url_event("/orders", headers={"idempotency-key": "hung"}), Context())
        )
        took = time.monotonic() - started
    assert (status, body["error"], headers["Retry-After"]) == (503, "unavailable", "1")
    assert timing.DYNAMODB_READ_TIMEOUT_SECONDS <= took < timing.REQUEST_BUDGET_SECONDS
