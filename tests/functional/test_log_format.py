"""The audit record of an issuance (tickets.counters): the real handler, on real Function URL events,
prints ONE JSON line per issuing request, Powertools' EMF metrics line, and that line carries the
audit fields docs/how-to/restore.md's Logs Insights queries read, exactly (tickets above 2^53 too), whatever the
log level."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from common import EXAMPLE_CONFIG
from moto_deployment import FakeLambdaContext, function_url_event
from tickets.counters import AUDIT_FIELDS
from tickets.runtime import logger

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)

REPO = Path(__file__).resolve().parents[2]
REQUEST_ID = "5d24d88b-audit-test"
BIG = 2**62 + 1  # above 2^53: a float would round it
BIG_COUNTER = {"start": str(BIG), "max": str(2**63 - 1)}  # decimal strings: cdk.json's exact form
CONFIG = {**EXAMPLE_CONFIG, "counters": {**EXAMPLE_CONFIG["counters"], "big": BIG_COUNTER}}
SAFE = 2**53 - 1  # a counter's default max


@pytest.fixture
def printed(monkeypatch, capsys):
    """The lines the function prints during the call given, parsed: Powertools' logger writes to the
    stream it was made with, so it is pointed at the captured stdout, at INFO (the deployed level)."""
    for handler in logger.handlers:
        monkeypatch.setattr(handler, "stream", sys.stdout)
    level = logger.log_level
    logger.setLevel("INFO")

    def lines_of(call):
        capsys.readouterr()
        answer = call()
        return answer, [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    yield lines_of
    logger.setLevel(level)


def post(api, path: str, **event_args) -> dict:
    """The function's answer to a POST whose Function URL request id is REQUEST_ID."""
    event = function_url_event(path, "POST", **event_args)
    event["requestContext"]["requestId"] = REQUEST_ID
    return api.handler.lambda_handler(event, FakeLambdaContext())


def audit_of(line: dict) -> dict:
    return {name: line[name] for name in AUDIT_FIELDS if name in line}


@pytest.mark.parametrize(
    "path, query, audit",
    [
        # tickets_left: the lane's tickets after the block, up to max (2^53-1 unless configured), step apart
        (
            "/orders",
            None,
            {"key": "orders", "count": 1, "first_ticket": 5000, "last_ticket": 5000, "tickets_left": SAFE - 5000},
        ),
        (
            "/orders",
            {"count": "3"},
            {"key": "orders", "count": 3, "first_ticket": 5000, "last_ticket": 5002, "tickets_left": SAFE - 5002},
        ),
        (
            "/invoices",
            {"count": "3"},
            {"key": "invoices", "count": 3, "first_ticket": 1, "last_ticket": 21, "tickets_left": (SAFE - 21) // 10},
        ),
        (
            "/_blocks/orders",
            {"count": "1000"},
            {"key": "orders", "count": 1000, "first_ticket": 5000, "last_ticket": 5999, "tickets_left": SAFE - 5999},
        ),
        (
            "/big",
            {"count": "2"},
            {
                "key": "big",
                "count": 2,
                "first_ticket": BIG,
                "last_ticket": BIG + 1,
                "tickets_left": 2**63 - 1 - (BIG + 1),
            },
        ),
    ],
    ids=["one", "list", "stride", "range-block", "above-2^53"],
)
def test_an_issuance_prints_one_line_the_metrics_line_with_its_audit_fields(deploy, printed, path, query, audit):
    api = deploy(CONFIG)
    answer, lines = printed(lambda: post(api, path, query=query))
    assert answer["statusCode"] == 200
    assert len(lines) == 1, lines  # one line per request: no separate audit line
    [line] = lines
    metrics = line["_aws"]["CloudWatchMetrics"][0]
    assert metrics["Namespace"] == "Tickets" and {"Name": "TicketsIssued", "Unit": "Count"} in metrics["Metrics"]
    assert line["TicketsIssued"] == [float(audit["count"])]
    assert audit_of(line) == {**audit, "correlation_id": REQUEST_ID}


def test_a_replayed_idempotent_answer_and_a_refusal_carry_no_issuance(deploy, printed):
    api = deploy(CONFIG)
    headers = {"idempotency-key": "audit-1"}
    _, first = printed(lambda: api.post("/orders", headers=headers))
    assert [audit_of(line)["first_ticket"] for line in first] == [5000]
    answer, replay = printed(lambda: api.post("/orders", headers=headers))
    assert answer.body["ticket"] == 5000
    assert not [line for line in replay if "first_ticket" in line]  # nothing new issued
    refused, lines = printed(lambda: api.post("/orders", query={"count": "0"}))
    assert refused.status == 400
    assert lines and not [line for line in lines if "first_ticket" in line]


def test_the_log_level_does_not_turn_the_audit_off(deploy, printed):
    api = deploy(CONFIG)
    logger.setLevel("ERROR")
    _, lines = printed(lambda: api.post("/orders"))
    logger.setLevel("INFO")
    assert [audit_of(line)["first_ticket"] for line in lines] == [5000]


def test_the_runbooks_queries_read_fields_the_line_carries(deploy, printed):
    """Every field docs/explanation/ledger.md's Logs Insights queries filter or aggregate on is one the
    audit line carries (Logs Insights' own fields start with @)."""
    operations = " ".join((REPO / "docs" / "how-to" / "restore.md").read_text(encoding="utf-8").split())
    queries = [query for query in re.findall(r"`([^`]*\| *(?:stats|fields)[^`]*)`", operations)]
    assert len(queries) >= 2, queries
    words = {
        word
        for query in queries
        for word in re.findall(r"(?<![@\"\w])([a-z_]+)(?![\w(\"])", re.sub(r'"[^"]*"', '""', query))
    }
    fields = words - {"filter", "and", "or", "not", "stats", "fields", "by", "sort", "desc", "asc", "limit"}
    _, [line] = printed(lambda: deploy(CONFIG).post("/orders"))
    assert fields and fields <= set(audit_of(line)), (fields, line)
    assert "ispresent(last_ticket)" in operations  # what tells an issuance's line from other lines
