"""The dispatch by the route table (lambda_src/tickets/dispatch.py): each route's operation, declared in the
table, reaches the access check (Runtime.authorize), which every handler runs as soon as it knows its key:
before an idempotent replay and before any DynamoDB call. The rules' own cases are
tests/functional/access/test_access.py."""

from __future__ import annotations

import pytest

from moto_deployment import COUNTER_TABLE, IDEMPOTENCY_TABLE, FakeLambdaContext, function_client, function_url_event
from tickets.access import Identity, Rules
from tickets.app import create_app


class Recorded(Rules):
    """Rules that refuse the key `secret` to everyone and record every question asked of them."""

    def __init__(self) -> None:
        super().__init__(())
        object.__setattr__(self, "asked", [])

    def allows(self, identity: Identity, operation: str, key: str) -> bool:
        self.asked.append((operation, key))  # type: ignore[attr-defined]
        return key != "secret"


def app_with_rules(region, rules: Recorded):
    client = function_client(region.region)
    return create_app(region.settings, client, COUNTER_TABLE, IDEMPOTENCY_TABLE, access=lambda: rules)


@pytest.mark.parametrize(
    "path, method, query, operation",
    [
        ("/orders", "GET", None, "issue"),
        ("/", "GET", {"key": "orders"}, "issue"),
        ("/_blocks/orders", "POST", None, "issue"),
        ("/_counters/orders", "GET", None, "read"),
        ("/_series/orders", "POST", None, "series"),
        ("/_series/orders/void", "POST", None, "void"),
        ("/_series/orders/journal", "GET", None, "read"),
    ],
)
def test_each_route_asks_for_its_operation_on_its_key(api, path, method, query, operation):
    rules = Recorded()
    app_with_rules(api, rules).lambda_handler(function_url_event(path, method, query=query), FakeLambdaContext())
    assert rules.asked == [(operation, "orders")]


def test_health_asks_nothing(api):
    rules = Recorded()
    answer = app_with_rules(api, rules).lambda_handler(function_url_event("/_health"), FakeLambdaContext())
    assert answer["statusCode"] == 200 and rules.asked == []


def test_a_refusal_comes_before_any_dynamodb_call_and_any_replay(api):
    """`/secret` is refused even with an Idempotency-Key whose answer is stored (the check runs before
    the replay), and the refused request makes no DynamoDB call at all."""
    rules = Recorded()
    app = app_with_rules(api, rules)
    once = {"Idempotency-Key": "same"}
    first = app.lambda_handler(function_url_event("/secret", headers=once), FakeLambdaContext())
    assert first["statusCode"] == 403 and '"error":"forbidden"' in first["body"]
    stored = api.handler.lambda_handler(function_url_event("/secret", headers=once), FakeLambdaContext())
    assert stored["statusCode"] == 200  # the app without rules issued and stored the answer
    with api.dynamodb_calls() as calls:
        refused = app.lambda_handler(function_url_event("/secret", headers=once), FakeLambdaContext())
    assert refused["statusCode"] == 403 and calls == []
    assert api.items() != [] and rules.asked == [("issue", "secret"), ("issue", "secret")]


def test_no_question_for_a_path_no_route_serves(api):
    rules = Recorded()
    app = app_with_rules(api, rules)
    for path, method in (("/_x", "GET"), ("/a/b", "GET"), ("/_health", "POST")):
        answer = app.lambda_handler(function_url_event(path, method), FakeLambdaContext())
        assert answer["statusCode"] in (404, 405)
    assert rules.asked == []
