"""The compatibility route (config `compat`): GET /counter?systemKey=X answers the bare number, as the
API Gateway + DynamoDB atomic-counter pattern does, through the real handler on moto; its config; the
local server serving it; and the whole move of an old-pattern caller: the old table on moto,
`tickets_admin migrate`, then the compatibility route (docs/how-to/migrate.md)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from common import EXAMPLE_CONFIG
from local_support import call, write_cdk_json
from moto_deployment import COUNTER_TABLE
from tickets.settings import Settings
from tickets_admin.__main__ import main as admin_main
from tickets_deploy.config import parse_config
from tickets_deploy.environment import handler_environment
from tickets_deploy.rules import ConfigError
from tickets_local.server import LocalServer

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)
MOTO_ONLY = {
    "test_an_old_pattern_caller_changes_only_its_base_url"
}  # the old pattern's ADD, which the service never writes

COMPAT_CONFIG = {**EXAMPLE_CONFIG, "compat": {"path": "counter"}}
BARE_NUMBER = re.compile(r"[0-9]+")  # the whole body: no newline, no JSON
OLD_TABLE = "old-counters"


@pytest.fixture
def compat(deploy):
    return deploy(COMPAT_CONFIG)


def bare(answer) -> int:
    """The ticket of a compatibility answer, checked to be what the old pattern's callers parse."""
    assert answer.status == 200, answer.body
    assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert answer.headers["Cache-Control"] == "no-store"
    assert BARE_NUMBER.fullmatch(answer.body), answer.body
    return int(answer.body)


# --- config ---------------------------------------------------------------------------------------


def test_compat_is_off_by_default_and_reaches_the_handler_settings_when_set():
    assert parse_config(EXAMPLE_CONFIG).compat_path is None
    config = parse_config(COMPAT_CONFIG)
    assert config.compat_path == "counter"
    environment = handler_environment(config, "us-east-1", counter_table="c", idempotency_table="i")
    assert Settings.from_json(environment["TICKETS_SETTINGS"]).compat_path == "counter"


@pytest.mark.parametrize(
    "compat, field",
    [
        ({"path": "prod/counter"}, "tickets.compat.path"),  # one segment only
        ({"path": "/counter"}, "tickets.compat.path"),
        ({"path": "_counters"}, "tickets.compat.path"),  # our own routes all start with `_`
        ({"path": "_blocks"}, "tickets.compat.path"),
        ({"path": "_local"}, "tickets.compat.path"),  # the local server's document
        ({"path": ""}, "tickets.compat.path"),
        ({"path": 7}, "tickets.compat.path"),
        ({}, "tickets.compat.path"),
        ({"path": "orders"}, "tickets.compat.path"),  # /orders would no longer reach the key orders
        ({"path": "default"}, "tickets.compat.path"),  # the defaultKey
        ({"path": "counter", "stage": "prod"}, "tickets.compat.stage"),
        ("counter", "tickets.compat"),
    ],
)
def test_a_bad_compat_config_names_its_field(compat, field):
    with pytest.raises(ConfigError) as raised:
        parse_config({**EXAMPLE_CONFIG, "compat": compat})
    assert str(raised.value).startswith(f"{field}:"), str(raised.value)


# --- the route --------------------------------------------------------------------------------------


def test_without_compat_counter_is_an_ordinary_key(api):
    """Today's behaviour, kept: /counter is the key `counter`, and naming another key is refused."""
    answer = api.get("/counter")
    assert (answer.status, answer.body) == (200, {"key": "counter", "ticket": 1})
    refused = api.get("/counter", query={"systemKey": "orders"})
    assert refused.status == 400
    assert refused.body["message"] == "the request names different keys (path, systemKey); name one"


def test_the_old_patterns_request_gets_the_bare_number(compat):
    assert [bare(compat.get("/counter", query={"systemKey": "orders"})) for _ in range(3)] == [5000, 5001, 5002]
    # The same counter as every other route: the next ticket of /orders follows.
    assert compat.get("/orders").body == {"key": "orders", "ticket": 5003}


@pytest.mark.parametrize(
    "accept", ["application/json", "text/plain", "*/*", "text/html,application/xhtml+xml,*/*;q=0.8", None]
)
def test_the_answer_is_text_whatever_accept_says(compat, accept):
    headers = {"accept": accept} if accept else {}
    assert bare(compat.get("/counter", query={"systemKey": "invoices"}, headers=headers)) == 1


def test_the_route_takes_what_the_root_takes(compat):
    """key= is systemKey's other name, POST works like GET, count asks for several (one a line), a
    trailing slash is the same path."""
    assert bare(compat.get("/counter", query={"key": "orders"})) == 5000
    assert bare(compat.post("/counter", query={"systemKey": "orders"})) == 5001
    assert bare(compat.post("/counter", body='{"key": "orders"}')) == 5002
    assert bare(compat.get("/counter/", query={"systemKey": "orders"})) == 5003
    several = compat.get("/counter", query={"systemKey": "orders", "count": "3"})
    assert (several.status, several.body) == (200, "5004\n5005\n5006")


def test_without_a_key_the_route_is_refused_not_served_from_the_default_key(deploy):
    """Before compat, GET /counter issued the key `counter`; had the route fallen back to the
    defaultKey, callers of that one URL would have got a second counter's numbers, repeating theirs."""
    before = deploy({"regions": {"us-east-1": 0}})
    assert [before.get("/counter").body["ticket"] for _ in range(3)] == [1, 2, 3]
    after = deploy({"regions": {"us-east-1": 0}, "compat": {"path": "counter"}})
    refused = after.get("/counter")
    assert (refused.status, refused.body["error"]) == (400, "bad_request")
    assert "?systemKey=KEY" in refused.body["message"]
    assert after.get("/_counters/default").status == 404  # nothing was issued
    assert bare(after.get("/counter", query={"systemKey": "counter"})) == 4  # the same counter continues


def test_the_key_named_like_the_path_is_still_reachable(compat):
    assert compat.get("/", query={"key": "counter"}).body == {"key": "counter", "ticket": 1}
    assert bare(compat.get("/counter", query={"systemKey": "counter"})) == 2
    assert compat.get("/_counters/counter").body["last"] == 2


def test_an_idempotency_key_is_honoured(compat):
    headers = {"Idempotency-Key": "order-7"}
    first = bare(compat.get("/counter", query={"systemKey": "orders"}, headers=headers))
    again = bare(compat.get("/counter", query={"systemKey": "orders"}, headers=headers))
    assert first == again == 5000
    assert bare(compat.get("/counter", query={"systemKey": "orders"})) == 5001
    # One request, whichever route carries it: the same header on / answers the same ticket.
    assert compat.get("/", query={"key": "orders"}, headers=headers).body == {"key": "orders", "ticket": 5000}
    reused = compat.get("/counter", query={"systemKey": "invoices"}, headers=headers)
    assert (reused.status, reused.body["error"]) == (422, "idempotency_key_reused")


@pytest.mark.parametrize(
    "query, status, code",
    [
        ({"systemKey": "no spaces"}, 400, "bad_request"),
        ({"systemKey": ""}, 400, "bad_request"),
        ({"systemKey": "orders", "stage": "prod"}, 400, "bad_request"),
        ({"systemKey": "orders", "key": "invoices"}, 400, "bad_request"),
        ({"systemKey": "orders", "count": "0"}, 400, "bad_request"),
    ],
)
def test_errors_are_the_usual_json_errors(compat, query, status, code):
    before = compat.items()
    answer = compat.get("/counter", query=query)
    assert (answer.status, answer.body["error"]) == (status, code)
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    assert compat.items() == before


def test_an_unserved_and_an_exhausted_key_are_json_errors(deploy):
    strict = deploy({**COMPAT_CONFIG, "strictKeys": True, "counters": {"small": {"max": 1}}})
    assert bare(strict.get("/counter", query={"systemKey": "small"})) == 1
    exhausted = strict.get("/counter", query={"systemKey": "small"})
    assert (exhausted.status, exhausted.body["error"]) == (409, "exhausted")
    unknown = strict.get("/counter", query={"systemKey": "nobody"})
    assert (unknown.status, unknown.body["error"]) == (404, "not_found")


def test_another_method_is_405_with_allow(compat):
    answer = compat.call("/counter", "PUT", query={"systemKey": "orders"})
    assert (answer.status, answer.headers["Allow"]) == (405, "GET, POST")
    assert compat.items() == []


def test_another_configured_path(deploy):
    region = deploy({**EXAMPLE_CONFIG, "compat": {"path": "next-id"}})
    assert bare(region.get("/next-id", query={"systemKey": "orders"})) == 5000
    assert region.get("/counter").body == {"key": "counter", "ticket": 1}


def test_the_path_is_literal_not_a_pattern(deploy):
    """Powertools compiles a route into a regular expression, where `.` matches any character: the path
    `v1.counter` once also took /v1-counter (a configured counter, then unreachable by its path)."""
    counters = {**EXAMPLE_CONFIG["counters"], "v1-counter": {"start": 70}}
    region = deploy({**EXAMPLE_CONFIG, "counters": counters, "compat": {"path": "v1.counter"}})
    assert bare(region.get("/v1.counter", query={"systemKey": "orders"})) == 5000
    assert region.get("/v1-counter").body == {"key": "v1-counter", "ticket": 70}
    assert region.get("/v1_counter").body == {"key": "v1_counter", "ticket": 1}
    refused = region.get("/v1-counter", query={"systemKey": "orders"})  # not the compat route: two keys named
    assert (refused.status, refused.body["error"]) == (400, "bad_request")
    assert region.get("/_counters/orders").body["last"] == 5000


@pytest.mark.slow
def test_the_local_server_serves_the_route_when_cdk_json_configures_it(tmp_path):
    with LocalServer(config_path=write_cdk_json(tmp_path, COMPAT_CONFIG)) as server:
        reply = call(server.url, "/counter?systemKey=orders", headers={"Accept": "application/json"})
        assert (reply.status, reply.headers["content-type"], reply.body) == (
            200,
            "text/plain; charset=utf-8",
            b"5000",
        )
        assert reply.headers["cache-control"] == "no-store"


# --- the whole move -----------------------------------------------------------------------------------


def old_pattern_counter(client, system_key: str) -> str:
    """What the API Gateway counter pattern's GET /prod/counter?systemKey=X does: one UpdateItem ADD on
    its table, answering the new value as the bare number (its mapping template's output)."""
    updated = client.update_item(
        TableName=OLD_TABLE,
        Key={"systemKey": {"S": system_key}},
        UpdateExpression="ADD #counter :one",
        ExpressionAttributeNames={"#counter": "counter"},
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )
    number: str = updated["Attributes"]["counter"]["N"]
    return number


def migrate(config_path, *extra: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = admin_main(
            [
                "migrate",
                "--from-table",
                OLD_TABLE,
                "--key-attribute",
                "systemKey",
                "--value-attribute",
                "counter",
                "--config",
                str(config_path),
                "--table",
                COUNTER_TABLE,
                *extra,
            ]
        )
    return status, out.getvalue().splitlines()


def test_an_old_pattern_caller_changes_only_its_base_url(deploy, tmp_path):
    """The old table has values; migrate with a margin; the old callers go on a little; they switch to
    the compatibility route and get bare numbers above everything the old counter gave; migrate again
    raises nothing."""
    tickets = deploy(COMPAT_CONFIG)
    client = tickets.client
    client.create_table(
        TableName=OLD_TABLE,
        KeySchema=[{"AttributeName": "systemKey", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "systemKey", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    old_answers = {key: [int(old_pattern_counter(client, key)) for _ in range(n)] for key, n in (("checkout", 41),)}
    client.put_item(TableName=OLD_TABLE, Item={"systemKey": {"S": "orders"}, "counter": {"N": "7000"}})
    config_path = write_cdk_json(tmp_path, COMPAT_CONFIG)

    status, out = migrate(config_path, "--margin", "1000")
    assert status == 0, out
    assert out[1:] == [
        "checkout: raised above 1041 (old value 41 + margin 1000): checkout (lane 0): unused -> last 1041; "
        "next ticket 1042",
        "orders: raised above 8000 (old value 7000 + margin 1000): orders (lane 0): unused -> last 8000; "
        "next ticket 8001",
        "2 key(s): 2 raised, 0 already above, 0 not migrated; 0 item(s) skipped",
    ]

    # Callers not yet switched keep counting on the old table, within the margin.
    old_answers["checkout"] += [int(old_pattern_counter(client, "checkout")) for _ in range(5)]
    highest_old = max(old_answers["checkout"])
    assert highest_old == 46

    # The switch: the same request, at Tickets' base URL; the same bare number to parse.
    new_answers = [bare(tickets.get("/counter", query={"systemKey": "checkout"})) for _ in range(5)]
    assert all(answer > 41 + 1000 for answer in new_answers)
    assert new_answers == sorted(set(new_answers))  # strictly increasing
    assert new_answers == [1042, 1043, 1044, 1045, 1046]
    assert bare(tickets.get("/counter", query={"systemKey": "orders"})) == 8001

    status, out = migrate(config_path)  # after the switch: the old values are all below
    assert status == 0
    assert out[1] == (
        "checkout: already above 46 (old value 46 + margin 0): checkout (lane 0): already above: last 1046, "
        "next ticket 1047"
    )
    assert out[-1] == "2 key(s): 0 raised, 2 already above, 0 not migrated; 0 item(s) skipped"
    assert bare(tickets.get("/counter", query={"systemKey": "checkout"})) == 1047
