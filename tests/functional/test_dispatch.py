"""The dispatch by the route table (lambda_src/tickets/dispatch.py): one place for a check per
route, run before the handler, so before an idempotent replay and before any DynamoDB call."""

from __future__ import annotations

import pytest

from moto_deployment import COUNTER_TABLE, IDEMPOTENCY_TABLE, FakeLambdaContext, function_client, function_url_event
from tickets.app import create_app
from tickets.errors import TicketsError


class Refused(TicketsError):
    status = 403
    code = "forbidden"


def app_with_check(region, checked):
    def check(services, request, route, arguments):
        checked.append((route.operation, route.path, arguments))
        if arguments.get("key") == "secret":
            raise Refused(f"no {route.operation} on this key")

    return create_app(region.settings, function_client(region.region), COUNTER_TABLE, IDEMPOTENCY_TABLE, check=check)


@pytest.mark.parametrize(
    "path, method, operation",
    [
        ("/orders", "GET", "issue"),
        ("/_blocks/orders", "POST", "issue"),
        ("/_counters/orders", "GET", "read"),
        ("/_health", "GET", "none"),
        ("/_series/orders", "POST", "series"),
        ("/_series/orders/void", "POST", "void"),
        ("/_series/orders/journal", "GET", "read"),
    ],
)
def test_the_check_sees_each_routes_operation_and_key(api, path, method, operation):
    checked = []
    app_with_check(api, checked).lambda_handler(function_url_event(path, method), FakeLambdaContext())
    assert [entry[0] for entry in checked] == [operation]
    assert checked[0][2] == ({} if path == "/_health" else {"key": "orders"})


def test_a_refusal_comes_before_any_dynamodb_call_and_any_replay(api):
    """`/secret` is refused even with an Idempotency-Key whose answer is stored (the check runs before
    the replay), and the refused request makes no DynamoDB call at all."""
    checked = []
    app = app_with_check(api, checked)
    once = {"Idempotency-Key": "same"}
    first = app.lambda_handler(function_url_event("/secret", headers=once), FakeLambdaContext())
    assert first["statusCode"] == 403 and '"error":"forbidden"' in first["body"]
    stored = api.handler.lambda_handler(function_url_event("/secret", headers=once), FakeLambdaContext())
    assert stored["statusCode"] == 200  # the app without the check issued and stored the answer
    with api.dynamodb_calls() as calls:
        refused = app.lambda_handler(function_url_event("/secret", headers=once), FakeLambdaContext())
    assert refused["statusCode"] == 403 and calls == []
    assert api.items() != [] and len(checked) == 2


def test_no_check_for_a_path_no_route_serves(api):
    checked = []
    app = app_with_check(api, checked)
    for path, method in (("/_x", "GET"), ("/a/b", "GET"), ("/_health", "POST")):
        answer = app.lambda_handler(function_url_event(path, method), FakeLambdaContext())
        assert answer["statusCode"] in (404, 405)
    assert checked == []
