"""The handler on real Function URL 2.0 events under moto: every route and error of openapi.json,
the sequences of docs/explanation/design.md#lanes, and that a refused request leaves the counter table as it was."""

from __future__ import annotations

import json
import sys

import pytest

import tickets
from common import BROWSER_ACCEPT, EXAMPLE_CONFIG
from moto_deployment import Answer, FakeLambdaContext, function_url_event
from tickets.runtime import logger as app_logger

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)

TEXT = {"accept": "text/plain"}


def assert_error(answer: Answer, status: int, code: str) -> None:
    assert answer.status == status, answer
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    assert set(answer.body) == {"error", "message"}, answer.body
    assert answer.body["error"] == code
    assert isinstance(answer.body["message"], str) and answer.body["message"]


def tickets_of(answer: Answer) -> list[int]:
    assert answer.status == 200, answer
    assert answer.headers["Cache-Control"] == "no-store"
    return answer.body.get("tickets", [answer.body["ticket"]])


def item(counter: str, last: int, step: int | None = None, first: int | None = None) -> dict:
    """A lane item as the handler writes it (step and first), or as a person writes one (neither)."""
    made = {"counter": {"S": counter}, "last": {"N": str(last)}}
    if step is not None:
        made["step"] = {"N": str(step)}
        made["first"] = {"N": str(first if first is not None else {"default": 1, "orders": 5000}.get(counter, 1))}
    return made


# --- routes -------------------------------------------------------------------------------------


def test_get_and_post_root_issue_the_default_key(api):
    assert api.get("/").body == {"key": "default", "ticket": 1}
    assert api.post("/").body == {"key": "default", "ticket": 2}
    assert api.items() == [item("default", 2, step=1)]


def test_get_and_post_a_key(api):
    assert api.get("/orders").body == {"key": "orders", "ticket": 5000}
    assert api.post("/orders").body == {"key": "orders", "ticket": 5001}
    assert api.get("/invoices").body == {"key": "invoices", "ticket": 1}
    assert api.get("/invoices").body == {"key": "invoices", "ticket": 11}


@pytest.mark.parametrize(
    "request_args",
    [
        {"query": {"key": "orders"}},
        {"query": {"systemKey": "orders"}},
        {"query": {"key": "orders", "systemKey": "orders"}},
        {"method": "POST", "body": '{"key": "orders"}'},
        {"method": "POST", "body": b'{"key": "orders"}'},  # base64, as a Function URL sends binary bodies
        {"path": "/orders/"},  # a trailing slash is no different
    ],
    ids=["key", "systemKey", "both", "body", "base64-body", "trailing-slash"],
)
def test_other_ways_to_name_a_key(api, request_args):
    assert api.get("/orders").body["ticket"] == 5000
    assert api.call(**{"path": "/", **request_args}).body == {"key": "orders", "ticket": 5001}


def test_count_one_is_a_plain_ticket(api):
    assert api.get("/orders", query={"count": "1"}).body == {"key": "orders", "ticket": 5000}


def test_count_1000_is_one_block_in_one_write(api):
    api.get("/invoices")
    body = api.get("/invoices", query={"count": "1000"}).body
    assert body["ticket"] == 11
    assert body["tickets"] == [11 + 10 * n for n in range(1000)]
    assert api.items() == [item("invoices", 11 + 10 * 999, step=10)]


def test_count_in_the_body(api):
    body = api.post("/orders", body='{"count": 3}', headers={"content-type": "application/json"}).body
    assert body == {"key": "orders", "ticket": 5000, "tickets": [5000, 5001, 5002]}


def test_counter_state_shows_last_step_and_config_and_issues_nothing(api):
    api.get("/invoices", query={"count": "3"})
    before = api.items()
    state = api.get("/_counters/invoices").body
    assert state["key"] == "invoices"
    assert state["last"] == 21
    assert state["step"] == 10
    assert state["config"] == {"start": 1, "stride": 10, "max": 2**53 - 1, "shards": 1}
    assert state["lanes"] == [{"counter": "invoices", "lane": 0, "first": 1, "step": 10, "last": 21}]
    assert api.get("/_counters/invoices/").body == state
    assert api.items() == before
    assert api.get("/invoices").body["ticket"] == 31


def test_counter_state_of_a_key_never_used_is_404(api):
    assert_error(api.get("/_counters/orders"), 404, "not_found")
    assert api.items() == []


@pytest.mark.parametrize("path", ["/a/b", "/_counters/a/b", "/orders/extra/"])
def test_other_paths_are_404(api, path):
    assert_error(api.get(path), 404, "not_found")


@pytest.mark.parametrize("path", ["/_health/", "/_x", "/_local", "/_journal", "/_orders", "/_"])
def test_unknown_paths_under_the_reserved_prefix_are_404_and_issue_nothing(api, path):
    """`_` starts no key: an unknown /_x is a path of ours that does not exist, never a key (README: 404)."""
    answer = api.get(path)
    if path == "/_health/":  # a trailing slash is ignored
        assert answer.status == 200
        return
    assert_error(answer, 404, "not_found")
    assert answer.body["message"].startswith("no such path; use /, /{key}, /_blocks/{key}, /_counters/{key}")
    assert_error(api.post(path), 404, "not_found")
    assert api.items() == []


@pytest.mark.parametrize(
    "path, needs",
    [("/_counters", "GET /_counters/{key}"), ("/_blocks", "GET or POST"), ("/_series", "POST /_series/{key}")],
)
def test_a_route_without_its_key_says_which_route_needs_it(api, path, needs):
    answer = api.get(path)
    assert_error(answer, 404, "not_found")
    assert answer.body["message"].startswith(f"{path} needs a key: {needs}")


def test_health_answers_version_region_and_slot_and_touches_nothing(deploy):
    region = deploy({**EXAMPLE_CONFIG, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}, "eu-west-1")
    with region.dynamodb_calls() as calls:
        answer = region.get("/_health")
    assert (answer.status, answer.headers["Content-Type"], answer.headers["Cache-Control"]) == (
        200,
        "application/json",
        "no-store",
    )
    assert answer.body == {"status": "ok", "version": tickets.__version__, "region": "eu-west-1", "slot": 1, "slots": 2}
    assert calls == []  # no DynamoDB call: a probe costs nothing and burns no number
    assert region.items() == []
    assert_error(region.get("/_health", query={"verbose": "1"}), 400, "bad_request")


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("DELETE", "/", "GET, POST"),
        ("PUT", "/orders", "GET, POST"),
        ("PATCH", "/orders/", "GET, POST"),
        ("HEAD", "/", "GET, POST"),
        ("OPTIONS", "/orders", "GET, POST"),
        ("POST", "/_counters/orders", "GET"),
        ("DELETE", "/_counters/orders", "GET"),
        ("POST", "/_health", "GET"),
        ("PUT", "/_blocks/orders", "GET, POST"),
    ],
)
def test_wrong_method_is_405_with_allow(api, method, path, allowed):
    answer = api.call(path, method)
    assert_error(answer, 405, "method_not_allowed")
    assert answer.headers["Allow"] == allowed
    assert api.items() == []


# --- rendering ----------------------------------------------------------------------------------


def test_text_plain_when_preferred(api):
    answer = api.get("/orders", headers=TEXT)
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.body == "5000\n"
    assert api.get("/orders", query={"count": "3"}, headers=TEXT).body == "5001\n5002\n5003\n"


def test_a_browser_gets_json(api):
    answer = api.get("/orders", headers={"accept": BROWSER_ACCEPT})
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.body == {"key": "orders", "ticket": 5000}


def test_errors_stay_json_for_text_callers(api):
    assert_error(api.get("/bad%20key", headers=TEXT), 400, "bad_request")


# --- invalid input: 400, and nothing written ----------------------------------------------------

INVALID = {
    "key-too-long": {"path": "/" + "k" * 101},
    "empty-query-key": {"query": {"key": ""}},
    "query-key-too-long": {"query": {"key": "k" * 101}},
    "space": {"path": "/bad%20key"},
    "hash": {"path": "/a%231"},
    "encoded-leading-underscore": {"path": "/%5Forders"},
    "leading-dot": {"path": "/.orders"},
    "query-leading-underscore": {"query": {"systemKey": "_orders"}},
    "encoded-slash": {"path": "/orders%2F..%2Finvoices"},
    "encoded-nul": {"path": "/orders%00"},
    "double-encoded-slash": {"path": "/a%252Fb"},
    "dot-dot": {"path": "/.."},
    "not-utf8": {"path": "/%FF"},
    "quote": {"path": '/a"b'},
    "backslash": {"path": "/a\\b"},
    "unicode": {"path": "/%C3%A9"},
    "keys-disagree": {"path": "/orders", "query": {"key": "invoices"}},
    "repeated-key": {"query": [("key", "orders"), ("key", "orders")]},
    "unknown-query": {"query": {"cnt": "2"}},
    "count-0": {"query": {"count": "0"}},
    "count-1001": {"query": {"count": "1001"}},
    "count-abc": {"query": {"count": "abc"}},
    "count-negative": {"query": {"count": "-1"}},
    "count-fraction": {"query": {"count": "1.0"}},
    "count-empty": {"query": {"count": ""}},
    "counts-disagree": {"method": "POST", "query": {"count": "2"}, "body": '{"count": 3}'},
    "body-not-json": {"method": "POST", "body": "count=2"},
    "body-array": {"method": "POST", "body": "[2]"},
    "body-unknown-field": {"method": "POST", "body": '{"cnt": 2}'},
    "body-count-fraction": {"method": "POST", "body": '{"count": 2.5}'},
    "body-binary": {"method": "POST", "body": b"\x00\xff\xfe"},
    "body-bad-base64": {"method": "POST", "body": "%%%", "base64_body": True},
    "counter-state-bad-key": {"path": "/_counters/_x"},
    "counter-state-encoded-slash": {"path": "/_counters/a%2Fb"},
}


@pytest.mark.parametrize("request_args", INVALID.values(), ids=INVALID.keys())
def test_invalid_requests_are_400_and_change_nothing(api, request_args):
    api.get("/orders")
    api.get("/")
    before = api.items()
    assert_error(api.call(**{"path": "/", **request_args}), 400, "bad_request")
    assert api.items() == before


def test_a_body_over_the_limit_is_413(api):
    assert_error(api.post("/orders", body='{"count": 1}' + " " * 2000), 413, "too_large")
    assert_error(api.post("/orders", body=b" " * 1100), 413, "too_large")
    assert api.items() == []


# --- strictKeys ---------------------------------------------------------------------------------


def test_strict_keys(deploy):
    api = deploy({**EXAMPLE_CONFIG, "strictKeys": True})
    assert_error(api.get("/unknown"), 404, "not_found")
    assert "only the keys in cdk.json (and the default key) are served" in api.get("/unknown").body["message"]
    assert_error(api.get("/", query={"key": "unknown"}), 404, "not_found")
    assert_error(api.get("/_counters/unknown"), 404, "not_found")
    assert api.items() == []
    assert api.get("/orders").body == {"key": "orders", "ticket": 5000}
    assert api.get("/").body == {"key": "default", "ticket": 1}
    assert api.get("/default").body == {"key": "default", "ticket": 2}


# --- items code did not write (docs/explanation/design.md#items): refused, never completed -------------------


def stepped(counter: str, last: int, step: int) -> dict:
    """An item with `step` but no `first`: typed in by hand, or written before lanes recorded `first`."""
    return {"counter": {"S": counter}, "last": {"N": str(last)}, "step": {"N": str(step)}}


@pytest.mark.parametrize(
    "key, unwritten, command",
    [
        ("invoices", item("invoices", 91), "raise invoices --above 91"),  # on the lane, the console way
        ("orders", item("orders", 4999), "raise orders --above 4999"),  # at the seed
        ("orders", stepped("orders", 5003, 1), "raise orders --above 5003"),  # on the lane, no first
        ("invoices", stepped("invoices", 21, 10), "raise invoices --above 21"),
        ("invoices", item("invoices", 95), "raise invoices --above 95"),  # off the lane
        ("invoices", {"counter": {"S": "invoices"}}, "raise invoices --above N"),  # nothing but the key
        ("invoices", {**item("invoices", 91), "first": {"N": "1"}}, "raise invoices --above 91"),  # no step
    ],
    ids=["no-step-no-first", "at-the-seed", "step-no-first", "step-no-first-10", "off-the-lane", "key-only", "no-step"],
)
def test_an_item_code_did_not_write_is_refused_untouched_naming_raise(api, key, unwritten, command):
    api.put_item(unwritten)
    for count in ("1", "2", "1"):  # every request refused: none may move `last` or add step and first
        answer = api.get(f"/{key}", query={"count": count})
        assert_error(answer, 409, "config_mismatch")
        assert f"`.venv/bin/python -m tickets_admin {command}`" in answer.body["message"]
    assert api.items() == [unwritten]


def test_an_item_code_did_not_write_is_refused_even_past_max(deploy):
    """Not `exhausted`: nothing about the item is trusted until tickets_admin raise made it a lane."""
    api = deploy({**EXAMPLE_CONFIG, "counters": {"small": {"max": 10}}})
    for unwritten in (item("small", 10), stepped("small", 9, 1)):
        api.put_item(unwritten)
        assert_error(api.get("/small", query={"count": "2"}), 409, "config_mismatch")
        assert api.items() == [unwritten]


@pytest.mark.parametrize(
    "key, changed",
    [
        ("orders", stepped("orders", 4995, 1)),  # below the lane: orders starts at 5000
        ("invoices", stepped("invoices", 21, 5)),  # another step
        ("invoices", item("invoices", 21, step=10, first=2)),  # another first ticket
    ],
    ids=["below-start", "other-step", "other-first"],
)
def test_an_item_of_another_config_is_refused_before_any_write(api, key, changed):
    api.put_item(changed)
    for _ in range(6):  # every request refused: none may move `last` towards the lane
        answer = api.get(f"/{key}")
        assert_error(answer, 409, "config_mismatch")
    assert api.items() == [changed]


def test_a_changed_start_points_to_the_ledgers_config_or_a_new_key_raised_above(deploy):
    old = deploy({**EXAMPLE_CONFIG, "counters": {"orders": {"start": 5000}}})
    assert tickets_of(old.get("/orders")) == [5000]
    moved = deploy({**EXAMPLE_CONFIG, "counters": {"orders": {"start": 7000}}})
    answer = moved.get("/orders")
    assert_error(answer, 409, "config_mismatch")
    message = answer.body["message"]
    assert "'orders' starts at 5000, but the config starts it at 7000" in message
    assert "deploy the config the deployment ledger (tickets.lock.json) records" in message
    assert "python -m tickets_admin raise NEWKEY --above N" in message
    assert "by hand" not in message and "edit" not in message


# --- max ----------------------------------------------------------------------------------------


def test_exhaustion_at_max_is_exact(deploy):
    api = deploy({**EXAMPLE_CONFIG, "counters": {"small": {"start": 1, "stride": 2, "max": 9}}})
    assert tickets_of(api.get("/small", query={"count": "3"})) == [1, 3, 5]
    before = api.items()
    assert_error(api.get("/small", query={"count": "3"}), 409, "exhausted")  # 7, 9, 11: refused whole
    assert api.items() == before
    assert tickets_of(api.get("/small", query={"count": "2"})) == [7, 9]  # 9 == max is issued
    before = api.items()
    assert_error(api.get("/small"), 409, "exhausted")
    assert_error(api.get("/small", headers=TEXT), 409, "exhausted")
    assert api.items() == before == [item("small", 9, step=2)]


def test_exhausted_shows_the_step(deploy):
    """With step 4, a refusal naming only the count and the max (3 more, max 5) reads wrong: the step is said."""
    api = deploy({**EXAMPLE_CONFIG, "counters": {"small": {"start": 1, "stride": 4, "max": 5}}})
    assert tickets_of(api.get("/small")) == [1]
    answer = api.get("/small", query={"count": "3"})
    assert_error(answer, 409, "exhausted")
    assert (
        "cannot issue "  # the verb apart from the count: `git grep "issue [0-9]"` looks for work-item numbers
        "3 more ticket(s) without passing its max (5): a lane's tickets are 4 apart" in (answer.body["message"])
    )


def test_max_may_be_int64(deploy):
    top = 2**63 - 1
    # Above 2^53-1 as decimal strings: the CDK CLI would round JSON numbers (cdk.json is read in Node).
    api = deploy({**EXAMPLE_CONFIG, "counters": {"big": {"start": str(top - 2), "max": str(top)}}})
    assert tickets_of(api.get("/big", query={"count": "3"})) == [top - 2, top - 1, top]
    assert_error(api.get("/big"), 409, "exhausted")


def test_a_new_counter_whose_first_block_passes_max_writes_nothing(deploy):
    api = deploy({**EXAMPLE_CONFIG, "counters": {"tiny": {"start": 10, "max": 12}}})
    assert_error(api.get("/tiny", query={"count": "4"}), 409, "exhausted")
    assert api.items() == []
    assert_error(api.get("/_counters/tiny"), 404, "not_found")
    assert tickets_of(api.get("/tiny", query={"count": "3"})) == [10, 11, 12]


# --- config changes after tickets were issued ---------------------------------------------------


@pytest.mark.parametrize(
    "changed",
    [
        {"counters": {"invoices": {"start": 1, "stride": 5}}},
        {"counters": {"invoices": {"start": 1, "stride": 10, "shards": 1}}, "regionSlots": 2},
        # the same step, but another first ticket: only the lane's recorded `first` can tell
        {"counters": {"invoices": {"start": 5, "stride": 10}}},
        {"counters": {"invoices": {"start": 1001, "stride": 10}}},
        # slot 1 of 2 with stride 5: the same step (10) as before, but the lane now starts at 16
        {"regions": {"us-east-1": 1}, "regionSlots": 2, "counters": {"invoices": {"start": 11, "stride": 5}}},
    ],
    ids=["stride", "regionSlots", "start-on-another-lane", "start-ahead", "another-slot"],
)
def test_a_changed_lane_is_refused_before_any_write(deploy, changed):
    """Every request is refused, carries no ticket, and writes nothing."""
    first = deploy(EXAMPLE_CONFIG)
    assert tickets_of(first.get("/invoices", query={"count": "2"})) == [1, 11]
    before = first.items()
    second = deploy({**EXAMPLE_CONFIG, **changed})
    for _ in range(3):
        answer = second.get("/invoices")
        assert_error(answer, 409, "config_mismatch")
        assert "ticket" not in answer.body
    assert second.items() == before


# --- every answer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_args, status",
    [
        ({"path": "/"}, 200),
        ({"path": "/orders", "headers": TEXT}, 200),
        ({"path": "/_counters/default"}, 200),
        ({"path": "/bad%20key"}, 400),
        ({"path": "/nowhere/at/all"}, 404),
        ({"path": "/", "method": "PUT"}, 405),
        ({"path": "/", "method": "POST", "body": "x" * 3000}, 413),
        ({"path": "/orders%FF"}, 400),
    ],
    ids=["200", "200-text", "200-state", "400", "404", "405", "413", "400-utf8"],
)
def test_every_answer_says_no_store(api, request_args, status):
    api.get("/")
    answer = api.call(**request_args)
    assert answer.status == status
    assert answer.headers["Cache-Control"] == "no-store"
    if status >= 400:
        assert_error(answer, status, answer.body["error"])
        assert "Retry-After" not in answer.headers


def test_each_request_logs_one_json_line_with_key_tickets_and_correlation_id(api, capsys):
    app_logger.setLevel("INFO")
    # The module may have been imported under another test's capture: write to this test's stdout.
    streams = [handler.setStream(sys.stdout) for handler in app_logger.handlers]
    capsys.readouterr()
    event = function_url_event("/orders", query={"count": "3"})
    try:
        answer = json.loads(api.handler.lambda_handler(event, FakeLambdaContext())["body"])
    finally:
        for handler, stream in zip(app_logger.handlers, streams):
            handler.setStream(stream)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 1, lines  # the metrics line, which carries the audit (tests/functional/test_log_format.py)
    line = lines[0]
    assert line["TicketsIssued"] == [3.0]
    assert (line["key"], line["count"]) == ("orders", 3)
    assert (line["first_ticket"], line["last_ticket"]) == (answer["tickets"][0], answer["tickets"][-1])
    assert line["correlation_id"] == event["requestContext"]["requestId"]


@pytest.mark.parametrize("path", ["/_counters", "/_counters/"])
def test_counters_without_a_key_is_404(api, path):
    assert_error(api.get(path), 404, "not_found")


@pytest.mark.parametrize("body", ['{"count": "7"}', '{"count": 7.5}', '{"count": true}', '{"count": 1e400}'])
def test_a_body_count_must_be_a_json_integer(api, body):
    assert_error(api.post("/orders", body=body), 400, "bad_request")
    assert api.items() == []


# --- /_counters takes nothing but the key -------------------------------------------------------


@pytest.mark.parametrize(
    "request_args",
    [
        {"query": {"foo": "bar"}},
        {"query": {"key": "invoices"}},
        {"query": {"key": "orders"}},
        {"query": {"count": "2"}},
        {"query": [("x", "")]},
        {"body": "{}"},
        {"body": "x"},
        {"body": b"\x00"},
    ],
    ids=["unknown", "other-key", "same-key", "count", "blank", "json-body", "text-body", "binary-body"],
)
def test_counter_state_refuses_any_query_parameter_or_body(api, request_args):
    api.get("/orders")
    before = api.items()
    assert_error(api.get("/_counters/orders", **request_args), 400, "bad_request")
    assert api.items() == before


# --- duplicate and repeated fields --------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"count": 2, "count": 3}',
        '{"count": 2, "count": 2}',
        '{"key": "orders", "key": "invoices"}',
        '{"key": "orders", "count": 1, "key": "orders"}',
    ],
)
def test_a_body_that_repeats_a_field_is_400(api, body):
    api.get("/orders")
    before = api.items()
    answer = api.post("/orders", body=body)
    assert_error(answer, 400, "bad_request")
    assert "repeat" in answer.body["message"]
    assert api.items() == before


@pytest.mark.parametrize("name", ["count", "key", "systemKey"])
def test_a_repeated_query_parameter_is_400_saying_so(api, name):
    value = "2" if name == "count" else "orders"
    answer = api.get("/", query=[(name, value), (name, value)])  # AWS: queryStringParameters {name: "v,v"}
    assert_error(answer, 400, "bad_request")
    assert f"{name} was repeated" in answer.body["message"], answer.body
    assert "2,2" not in answer.body["message"] and "orders,orders" not in answer.body["message"]
    assert api.items() == []


# --- what an error repeats of its input ---------------------------------------------------------

LONG = 6000
HUGE_INPUTS = {
    "path-key": {"path": "/" + "k" * LONG},
    "state-path-key": {"path": "/_counters/" + "k" * LONG},
    "deep-path": {"path": "/a/" + "k" * LONG},
    "query-key": {"query": {"key": "k" * LONG}},
    "query-systemKey": {"query": {"systemKey": "_" * LONG}},
    "query-count": {"query": {"count": "9" * LONG}},
    "query-name": {"query": {"n" * LONG: "1"}},
    "query-value": {"query": {"x": "v" * LONG}},
    "state-query": {"path": "/_counters/orders", "query": {"q" * LONG: "v" * LONG}},
    "repeated-query": {"query": [("key", "k" * LONG), ("key", "k" * LONG)]},
    "idempotency-key": {"headers": {"idempotency-key": "i" * LONG}},
    "accept": {"headers": {"accept": "text/plain;q=0.1," * (LONG // 17)}},
    "body": {"method": "POST", "body": "b" * LONG},
    "body-field": {"method": "POST", "body": json.dumps({"f" * 1000: 1})},
    "body-key": {"method": "POST", "body": json.dumps({"key": "k" * 1000})},
    "body-count": {"method": "POST", "body": '{"count": ' + "9" * 1000 + "}"},
    "body-count-string": {"method": "POST", "body": json.dumps({"count": "9" * 1000})},
    "method": {"method": "P" * 100, "path": "/orders"},
}


@pytest.fixture
def log_lines(api):
    """The function's log lines (JSON, as CloudWatch gets them) while the test runs."""
    import io

    stream = io.StringIO()
    app_logger.setLevel("INFO")
    previous = [handler.setStream(stream) for handler in app_logger.handlers]
    yield lambda: [line for line in stream.getvalue().splitlines() if line.startswith("{")]
    for handler, old in zip(app_logger.handlers, previous):
        handler.setStream(old)


@pytest.mark.parametrize("request_args", HUGE_INPUTS.values(), ids=HUGE_INPUTS.keys())
def test_an_error_repeats_little_of_a_huge_input(api, log_lines, request_args):
    api.get("/orders")
    before = api.items()
    answer = api.call(**{"path": "/", **request_args})
    raw = json.dumps(answer.body) if isinstance(answer.body, dict) else answer.body
    if answer.status == 200:  # a long Accept header is no error
        assert request_args.get("headers", {}).get("accept")
        return
    assert_error(answer, answer.status, answer.body["error"])
    assert len(raw.encode()) < 1024, raw[:200]
    lines = log_lines()
    assert lines and all(len(line.encode()) < 1024 for line in lines), [len(line) for line in lines]
    assert api.items() == before


@pytest.mark.parametrize("body", ['{"count": 3.0}', '{"count": 3e0}', '{"count": 0.3e1}'])
def test_a_body_count_written_with_a_fraction_or_exponent_is_the_same_integer(api, body):
    """JSON has one number type, and openapi.json's `integer` (JSON Schema's) includes 3.0."""
    assert tickets_of(api.post("/orders", body=body)) == [5000, 5001, 5002]
