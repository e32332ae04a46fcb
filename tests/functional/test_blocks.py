"""Range blocks, `GET`/`POST /_blocks/{key}?count=N`, on the real handler under moto: one conditional
write for up to a million tickets, an answer of constant size, and the validation, errors,
idempotency, metrics and audit line of the ticket route (docs/explanation/design.md)."""

from __future__ import annotations

import json
import sys

import pytest
from test_handler import TEXT, assert_error, item
from test_idempotency import once

from common import EXAMPLE_CONFIG
from moto_deployment import IDEMPOTENCY_TABLE, FakeLambdaContext, function_url_event
from tickets.routes import ROUTES, allowed, route_of
from tickets.runtime import logger as app_logger

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)
MOTO_ONLY = {"test_max_block_lowers_the_bound_per_deployment_and_per_key"}  # botocore's _make_api_call

MILLION = 1_000_000


def block(first: int, last: int, step: int, count: int, key: str = "orders") -> dict:
    return {"key": key, "first": first, "last": last, "step": step, "count": count}


# --- the answer ---------------------------------------------------------------------------------


def test_a_block_is_a_range_and_the_counter_continues_after_it(api):
    assert api.get("/_blocks/orders", query={"count": "5"}).body == block(5000, 5004, 1, 5)
    assert api.items() == [item("orders", 5004, step=1)]
    assert api.get("/orders").body == {"key": "orders", "ticket": 5005}
    assert api.post("/_blocks/orders", query={"count": "3"}).body == block(5006, 5008, 1, 3)


def test_a_block_steps_by_the_lanes_step(api):
    api.get("/invoices")
    assert api.get("/_blocks/invoices", query={"count": "4"}).body == block(11, 41, 10, 4, key="invoices")
    assert api.get("/invoices").body["ticket"] == 51


@pytest.mark.parametrize(
    "request_args",
    [
        {"method": "POST", "body": '{"count": 5}'},
        {"method": "POST", "body": b'{"count": 5, "key": "orders"}'},  # base64, as a Function URL sends binary
        {"query": {"count": "5", "key": "orders"}},
        {"path": "/_blocks/orders/", "query": {"count": "5"}},
    ],
    ids=["body", "base64-body-with-key", "query-key-agrees", "trailing-slash"],
)
def test_count_and_key_may_come_as_on_the_ticket_route(api, request_args):
    answer = api.call(**{"path": "/_blocks/orders", **request_args})
    assert answer.body == block(5000, 5004, 1, 5)


def test_without_a_count_a_block_is_one_ticket(api):
    assert api.get("/_blocks/orders").body == block(5000, 5000, 1, 1)


def test_a_million_tickets_take_one_write_and_a_small_answer(api, dynamodb_calls):
    result = api.handler.lambda_handler(
        function_url_event("/_blocks/orders", query={"count": str(MILLION)}), FakeLambdaContext()
    )
    assert result["statusCode"] == 200
    assert json.loads(result["body"]) == block(5000, 5000 + MILLION - 1, 1, MILLION)
    assert len(result["body"]) < 100  # the answer's size does not grow with the count
    assert dynamodb_calls == [("UpdateItem", "tickets-test")]  # one conditional write, nothing read
    assert api.items() == [item("orders", 5000 + MILLION - 1, step=1)]
    assert api.get("/orders").body["ticket"] == 5000 + MILLION


def test_a_sharded_key_gives_a_block_of_one_lane(deploy):
    api = deploy({**EXAMPLE_CONFIG, "counters": {"hot": {"start": 1, "stride": 1, "shards": 4}}})
    answer = api.get("/_blocks/hot", query={"count": "1000"}).body
    assert answer["step"] == 4 and answer["count"] == 1000
    assert answer["first"] in (1, 2, 3, 4)  # the first block of whichever lane was picked
    assert answer["last"] == answer["first"] + 4 * 999


def test_text_plain_is_first_last_step_on_one_line(api):
    answer = api.get("/_blocks/invoices", query={"count": "3"}, headers=TEXT)
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.body == "1 21 10\n"


# --- limits and refusals: 4xx, and nothing written ----------------------------------------------

INVALID = {
    "count-0": {"query": {"count": "0"}},
    "count-over-a-million": {"query": {"count": str(MILLION + 1)}},
    "count-abc": {"query": {"count": "abc"}},
    "count-fraction": {"query": {"count": "10.5"}},
    "count-negative": {"query": {"count": "-5"}},
    "count-repeated": {"query": [("count", "5"), ("count", "5")]},
    "unknown-query": {"query": {"count": "5", "step": "2"}},
    "keys-disagree": {"query": {"key": "invoices"}},
    "body-unknown-field": {"method": "POST", "body": '{"count": 5, "first": 1}'},
    "body-count-float": {"method": "POST", "body": '{"count": 5.5}'},
    "body-count-too-big": {"method": "POST", "body": '{"count": 1000001}'},
    "counts-disagree": {"method": "POST", "query": {"count": "5"}, "body": '{"count": 6}'},
    "bad-key": {"path": "/_blocks/_orders"},
}


@pytest.mark.parametrize("request_args", INVALID.values(), ids=INVALID.keys())
def test_invalid_block_requests_are_400_and_change_nothing(api, request_args):
    api.get("/orders")
    before = api.items()
    assert_error(api.call(**{"path": "/_blocks/orders", **request_args}), 400, "bad_request")
    assert api.items() == before


def test_the_400_for_an_out_of_range_count_names_the_bound(api):
    answer = api.get("/_blocks/orders", query={"count": str(MILLION + 1)})
    assert_error(answer, 400, "bad_request")
    assert "1 to 1000000" in answer.body["message"]


def test_the_ticket_route_keeps_its_list_and_its_bound_of_1000(api):
    answer = api.get("/orders", query={"count": "1001"})
    assert_error(answer, 400, "bad_request")
    assert "1 to 1000" in answer.body["message"] and "1000000" not in answer.body["message"]
    assert api.get("/orders", query={"count": "2"}).body == {"key": "orders", "ticket": 5000, "tickets": [5000, 5001]}


def test_max_block_lowers_the_bound_per_deployment_and_per_key(deploy, monkeypatch):
    api = deploy({**EXAMPLE_CONFIG, "maxBlock": 500, "counters": {"orders": {"start": 5000, "maxBlock": 100}}})
    answer = api.get("/_blocks/orders", query={"count": "101"})
    assert_error(answer, 400, "bad_request")
    assert "100" in answer.body["message"] and "maxBlock" in answer.body["message"]
    answer = api.get("/_blocks/invoices", query={"count": "501"})
    assert_error(answer, 400, "bad_request")
    assert "500" in answer.body["message"]
    calls: list = []
    with monkeypatch.context() as patch:
        patch.setattr(api.handler.dynamodb, "_make_api_call", lambda *args: calls.append(args))
        answer = api.post("/_blocks/orders", query={"count": "101"}, headers=once("too-big"))
    assert_error(answer, 400, "bad_request")
    # Refused before any write to the counter table; the Idempotency-Key's record is looked up first, since a
    # retry of a block issued under a higher maxBlock gets its answer
    # (docs/explanation/failures-and-idempotency.md#idempotency).
    assert [operation for operation, _ in calls] == ["PutItem", "DeleteItem"]
    assert {params["TableName"] for _, params in calls} == {IDEMPOTENCY_TABLE}
    assert api.get("/_blocks/orders", query={"count": "100"}).body == block(5000, 5099, 1, 100)
    assert api.get("/_blocks/invoices", query={"count": "500"}).body["count"] == 500


def test_a_block_passing_max_is_exhausted_and_writes_nothing(deploy):
    api = deploy({**EXAMPLE_CONFIG, "counters": {"small": {"start": 1, "max": 1000}}})
    assert api.get("/_blocks/small", query={"count": "990"}).body == block(1, 990, 1, 990, key="small")
    before = api.items()
    for count in (11, MILLION):
        answer = api.get("/_blocks/small", query={"count": str(count)})
        assert_error(answer, 409, "exhausted")
        assert "first" not in answer.body
        assert api.items() == before
    assert api.get("/_blocks/small", query={"count": "10"}).body == block(991, 1000, 1, 10, key="small")


def test_a_new_counter_whose_first_block_passes_max_writes_nothing(deploy):
    api = deploy({**EXAMPLE_CONFIG, "counters": {"tiny": {"start": 10, "max": 20}}})
    assert_error(api.get("/_blocks/tiny", query={"count": "12"}), 409, "exhausted")
    assert api.items() == []


def test_strict_keys_refuse_an_unknown_key_on_the_block_route(deploy):
    api = deploy({**EXAMPLE_CONFIG, "strictKeys": True})
    assert_error(api.get("/_blocks/unknown", query={"count": "5"}), 404, "not_found")
    assert api.items() == []


@pytest.mark.parametrize("path", ["/_blocks", "/_blocks/", "/_blocks/orders/more"])
def test_block_paths_without_one_key_are_404(api, path):
    assert_error(api.get(path), 404, "not_found")
    assert api.items() == []


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
def test_other_methods_on_a_block_path_are_405(api, method):
    answer = api.call("/_blocks/orders", method)
    assert_error(answer, 405, "method_not_allowed")
    assert answer.headers["Allow"] == "GET, POST"
    route = route_of("/_blocks/orders", ROUTES)
    assert route is not None and allowed(route, ROUTES) == "GET, POST"
    assert api.items() == []


# --- idempotency, metrics, the audit line -------------------------------------------------------


def test_a_repeated_idempotency_key_gets_the_same_block_and_burns_none(api):
    first = api.post("/_blocks/orders", query={"count": "5"}, headers=once("block-1"))
    assert first.body == block(5000, 5004, 1, 5)
    counters = api.items()
    assert api.post("/_blocks/orders", body='{"count": 5}', headers=once("block-1")).body == first.body
    text = api.post("/_blocks/orders", query={"count": "5"}, headers={**once("block-1"), **TEXT})
    assert text.body == "5000 5004 1\n"
    assert api.items() == counters


@pytest.mark.parametrize(
    "first_path, second_path",
    [
        ("/orders", "/_blocks/orders"),
        ("/_blocks/orders", "/orders"),
    ],
    ids=["list-then-block", "block-then-list"],
)
def test_one_idempotency_key_on_both_issuing_routes_is_422(api, first_path, second_path):
    assert api.post(first_path, query={"count": "5"}, headers=once("k1")).status == 200
    counters, records = api.items(), api.items(IDEMPOTENCY_TABLE)
    answer = api.post(second_path, query={"count": "5"}, headers=once("k1"))
    assert_error(answer, 422, "idempotency_key_reused")
    assert (api.items(), api.items(IDEMPOTENCY_TABLE)) == (counters, records)


def handler_output(api, capsys, event: dict) -> tuple[dict, list[dict]]:
    """The handler's answer and every JSON line it printed (log lines and EMF metrics), at INFO."""
    app_logger.setLevel("INFO")
    # The module may have been imported under another test's capture: write to this test's stdout.
    streams = [handler.setStream(sys.stdout) for handler in app_logger.handlers]
    capsys.readouterr()
    try:
        result = api.handler.lambda_handler(event, FakeLambdaContext())
    finally:
        for handler, stream in zip(app_logger.handlers, streams):
            handler.setStream(stream)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return result, lines


def test_a_block_is_counted_and_logged_like_the_tickets_it_holds(api, capsys):
    event = function_url_event("/_blocks/orders", query={"count": str(MILLION)})
    result, lines = handler_output(api, capsys, event)
    assert result["statusCode"] == 200
    [audit] = lines  # one line: the metrics line, which carries the audit fields
    assert (audit["key"], audit["count"]) == ("orders", MILLION)
    assert (audit["first_ticket"], audit["last_ticket"]) == (5000, 5000 + MILLION - 1)
    assert audit["correlation_id"] == event["requestContext"]["requestId"]
    assert "_aws" in audit and audit["TicketsIssued"] == [MILLION]  # EMF lists a metric's values
