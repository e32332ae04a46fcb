"""The access rules' store (tickets/access/store.py): the rules read with botocore's SSM client at cold start and
in a request, on moto and on a stand-in for SSM over HTTP for what moto does not do (throttling, a denied read, no
answer); each failure a 503 within the request's deadline, never an open door; and the entry point, imported in a
fresh process as Lambda imports it, reading them once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from typing import Any

import boto3
import botocore.session
import pytest

from access_support import ACCOUNT, closed_port_url, error_answer, role_session, ssm_stub, values_answer
from moto_deployment import Region, function_client, function_url_event
from tickets import timing
from tickets.access import ACCESS_PARAMETERS_ENV
from tickets.access.store import (
    RETRY_AFTER_FAILURE_SECONDS,
    SSM_CONFIG,
    SSM_READS_MODEL,
    StoredRules,
    ssm_client,
)
from tickets.app import create_app
from tickets.errors import Unavailable
from tickets_deploy.config import parse_config
from tickets_deploy.environment import handler_environment

RULES = {
    "p0": json.dumps({"*": {"read": ["*"]}}),
    "p1": json.dumps({f"arn:aws:iam::{ACCOUNT}:role/orders-service": {"issue": ["orders"]}}),
}


def _cut(model: dict[str, Any], operations: list[str]) -> dict[str, Any]:
    """A botocore service model cut to `operations` and the shapes they reach, without documentation."""

    def undocumented(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: undocumented(entry) for key, entry in value.items() if key != "documentation"}
        return [undocumented(entry) for entry in value] if isinstance(value, list) else value

    shapes: set[str] = set()

    def reach(name: str) -> None:
        if name not in shapes:
            shapes.add(name)
            shape = model["shapes"][name]
            references = [*(shape.get(key) for key in ("member", "key", "value")), *shape.get("members", {}).values()]
            for reference in filter(None, references):
                reach(reference["shape"])

    for operation in operations:
        described = model["operations"][operation]
        for reference in [described["input"], described["output"], *described.get("errors", [])]:
            reach(reference["shape"])
    return {
        "version": model["version"],
        "metadata": model["metadata"],
        "operations": {operation: undocumented(model["operations"][operation]) for operation in operations},
        "shapes": {name: undocumented(model["shapes"][name]) for name in sorted(shapes)},
    }


def _within(ours: Any, theirs: Any, where: str = "") -> None:
    """Every entry of `ours` is `theirs`' (a dict may leave entries out; anything else is equal)."""
    if isinstance(ours, dict):
        assert isinstance(theirs, dict), where
        for key, value in ours.items():
            assert key in theirs, f"{where}/{key}: not in botocore's SSM model"
            _within(value, theirs[key], f"{where}/{key}")
    else:
        assert ours == theirs, f"{where}: {ours!r} in SSM_READS_MODEL, {theirs!r} in botocore's SSM model"


def test_the_ssm_client_is_described_by_ssms_own_model_cut_to_its_two_reads():
    full = botocore.session.get_session().get_component("data_loader").load_service_model("ssm", "service-2")
    _within(SSM_READS_MODEL, _cut(full, ["GetParameter", "GetParameters"]))
    assert sorted(ssm_client(region_name="us-east-1").meta.service_model.operation_names) == [
        "GetParameter",
        "GetParameters",
    ]
    assert len(full["operations"]) > 100  # what a client made from botocore's own model parses and builds
    session = botocore.session.get_session()
    trimmed = ssm_client(session, region_name="us-east-1")  # the handler's session, shared with its DynamoDB client
    trimmed.exceptions  # noqa: B018  # made on first use, as by the first error answer the client reads
    dynamodb = session.create_client("dynamodb", region_name="us-east-1")
    assert len(dynamodb.meta.service_model.operation_names) > 30  # its loader was given back: other models whole
    assert dynamodb.exceptions.ConditionalCheckFailedException  # and their error classes
    whole_ssm = session.create_client("ssm", region_name="us-east-1")
    assert len(whole_ssm.meta.service_model.operation_names) > 100
    # What ssm_client's docstring says: the session's SSM error classes are the cut model's (none) from then on.
    with pytest.raises(AttributeError):
        whole_ssm.exceptions.ParameterNotFound  # noqa: B018
    assert botocore.session.get_session().create_client("ssm", region_name="us-east-1").exceptions.ParameterNotFound


def test_one_get_parameters_call_with_aws_endpoint_url_ssm_honoured(monkeypatch):
    with ssm_stub(values_answer(RULES)) as stub:
        monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", stub.url)
        stored = StoredRules(ssm_client(), list(RULES))
        stored.read_at_cold_start()
        assert len(stored().grants) == 2
    (seen,) = stub.seen
    assert seen.body == {"Names": ["p0", "p1"]} and seen.headers["x-amz-target"] == "AmazonSSM.GetParameters"


def test_a_refused_connection_is_transient():
    clock = _Clock()
    stored = StoredRules(ssm_client(endpoint_url=closed_port_url()), ["p0"], clock=clock, pause=clock.pause)
    stored.read_at_cold_start()
    assert len(clock.pauses) == timing.SSM_COLD_START_ATTEMPTS - 1  # asked again: worth it
    with pytest.raises(Unavailable, match="EndpointConnectionError"):
        stored()


def test_a_reads_worst_case_fits_a_requests_budget():
    """One attempt in a request: its timeouts, then the request's own DynamoDB call."""
    worst = timing.SSM_CONNECT_TIMEOUT_SECONDS + timing.SSM_READ_TIMEOUT_SECONDS
    assert worst + timing.WORST_CASE_CALL_SECONDS <= timing.REQUEST_BUDGET_SECONDS - timing.RENDER_MARGIN_SECONDS
    assert SSM_CONFIG.retries == {"mode": "standard", "total_max_attempts": 1}
    assert (SSM_CONFIG.connect_timeout, SSM_CONFIG.read_timeout) == (
        timing.SSM_CONNECT_TIMEOUT_SECONDS,
        timing.SSM_READ_TIMEOUT_SECONDS,
    )


# (status, SSM's error code, transient: asking again may succeed)
ERRORS = [
    (400, "ThrottlingException", True),
    (500, "InternalServerError", True),
    (503, "ServiceUnavailable", True),
    (400, "AccessDeniedException", False),
    (400, "InvalidKeyId", False),
    (400, "ValidationException", False),
]


# --- the access rules read through it -----------------------------------------------------------------------


def _with_stored_rules(deploy: Any, stored: StoredRules) -> Region:
    api = deploy({"regions": {"us-east-1": 0}})
    api._app = create_app(
        api.settings, function_client("us-east-1"), "tickets-test", "tickets-idempotency-test", access=stored
    )
    return api


def test_rules_in_ssm_decide_requests_through_botocores_client_on_moto(deploy):
    writer = boto3.client("ssm", region_name="us-east-1")
    for name, value in RULES.items():
        writer.put_parameter(Name=name, Value=value, Type="String")
    stored = StoredRules(ssm_client(region_name="us-east-1"), list(RULES))
    stored.read_at_cold_start()
    api = _with_stored_rules(deploy, stored)
    assert api.get("/orders", iam=role_session("orders-service")).status == 200
    assert api.get("/refunds", iam=role_session("orders-service")).status == 403
    assert api.get("/_counters/orders", iam=role_session("someone")).status == 200
    assert api.get("/orders", iam=role_session("someone")).status == 403


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("status, code, transient", ERRORS)
def test_a_cold_start_asks_again_once_after_a_transient_failure_only(status, code, transient):
    clock = _Clock()
    with ssm_stub(error_answer(status, code, "no")) as stub:
        stored = StoredRules(ssm_client(endpoint_url=stub.url), ["p0"], clock=clock, pause=clock.pause)
        stored.read_at_cold_start()
        with pytest.raises(Unavailable, match=rf"cannot read its access rules \(\w+: An error occurred \({code}\)"):
            stored()  # a request at once: not asked again
    assert len(stub.seen) == (timing.SSM_COLD_START_ATTEMPTS if transient else 1)
    assert len(clock.pauses) == len(stub.seen) - 1
    assert all(0 <= pause <= timing.SSM_RETRY_PAUSE_SECONDS for pause in clock.pauses)


def test_a_cold_start_whose_second_attempt_succeeds_has_its_rules():
    answers = iter([(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})])
    good = values_answer(RULES)
    clock = _Clock()
    with ssm_stub(lambda seen: next(answers, None) or good(seen)) as stub:
        stored = StoredRules(ssm_client(endpoint_url=stub.url), list(RULES), clock=clock, pause=clock.pause)
        stored.read_at_cold_start()
        rules = stored()
    assert len(stub.seen) == 2 and len(rules.grants) == 2


@pytest.mark.parametrize(
    "answer, why",
    [
        (error_answer(400, "ThrottlingException", "Rate exceeded"), r"\(ThrottlingException\)"),
        (error_answer(400, "AccessDeniedException", "not authorized"), r"\(AccessDeniedException\)"),
        (values_answer({"p0": RULES["p0"]}), "missing parameters: p1"),
        (values_answer({"p0": RULES["p0"], "p1": '["*"]'}), "ValueError: p1: not an object of principals"),
    ],
)
def test_each_failure_in_a_request_is_a_503_naming_it_then_asked_again_after_the_pause(deploy, answer, why):
    clock = _Clock()
    with ssm_stub(answer) as stub:
        stored = StoredRules(ssm_client(endpoint_url=stub.url), list(RULES), clock=clock, pause=clock.pause)
        api = _with_stored_rules(deploy, stored)
        with api.dynamodb_calls() as calls:
            first = api.get("/orders", iam=role_session("orders-service"))
        assert first.status == 503 and first.body["error"] == "unavailable" and first.headers["Retry-After"] == "1"
        assert re.search(why, first.body["message"]), first.body
        assert "nothing was done" in first.body["message"] and calls == []
        assert api.get("/orders", iam=role_session("orders-service")).status == 503
        assert len(stub.seen) == 1  # one attempt in a request, none again before the pause
        clock.now = RETRY_AFTER_FAILURE_SECONDS
        stub.answer = values_answer(RULES)
        assert api.get("/orders", iam=role_session("orders-service")).status == 200
    assert len(stub.seen) == 2


def test_a_request_whose_rules_get_no_answer_is_a_503_within_its_deadline(deploy):
    with ssm_stub(lambda seen: None) as stub:
        api = _with_stored_rules(deploy, StoredRules(ssm_client(endpoint_url=stub.url), ["p0"]))
        began = time.monotonic()
        answer = api.get("/orders", iam=role_session("orders-service"))
        took = time.monotonic() - began
    assert answer.status == 503 and "Read timeout" in answer.body["message"]
    # One attempt, bounded by its timeouts: the deadline keeps room for the request's own DynamoDB call.
    assert (
        timing.SSM_READ_TIMEOUT_SECONDS <= took < timing.SSM_CONNECT_TIMEOUT_SECONDS + timing.SSM_READ_TIMEOUT_SECONDS
    )
    assert len(stub.seen) == 1


# --- the entry point, as Lambda imports it ------------------------------------------------------------------

CHILD = """
import gc, json, sys, time
import tickets.handler as entry
import tickets.access.store
from tickets_local.server import LambdaContext
pause = float(sys.argv[2])
if pause:
    tickets.access.store.RETRY_AFTER_FAILURE_SECONDS = pause  # the test's, not 5 s
answers = []
for event in json.loads(sys.argv[1]):
    answers.append(entry.lambda_handler(event, LambdaContext(aws_request_id="r", invoked_function_arn="f")))
    time.sleep(pause)
print(json.dumps({"answers": answers, "collecting": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def _cold_start(access_env: dict[str, str], events: list[dict[str, Any]], pause: float = 0.0) -> dict[str, Any]:
    """tickets.handler imported in a new process with the function's environment (DynamoDB where nothing
    listens: a call there would fail the request), then `events` handled in order, `pause` seconds apart (if
    any; the rules then asked for again at most that often after a failure, instead of every 5 s)."""
    config = parse_config({"regions": {"us-east-1": 0}})
    env = {
        **os.environ,
        **handler_environment(config, "us-east-1", counter_table="t", idempotency_table="t-idempotency"),
        **access_env,
        "AWS_ENDPOINT_URL_DYNAMODB": closed_port_url(),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(events), str(pause)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_entry_point_reads_its_rules_once_at_cold_start_and_resumes_collecting():
    events = [function_url_event("/orders", iam=role_session("someone")), function_url_event("/_health", iam={})]
    with ssm_stub(values_answer(RULES)) as stub:
        access_env = {ACCESS_PARAMETERS_ENV: "p0,p1", "AWS_ENDPOINT_URL_SSM": stub.url}
        child = _cold_start(access_env, events)
    refused, health = child["answers"]
    assert refused["statusCode"] == 403 and "may not issue key 'orders'" in refused["body"]
    assert health["statusCode"] == 200
    assert len(stub.seen) == 1  # at cold start: the requests did not ask again
    assert child["collecting"] and child["frozen"] > 10_000  # what the build made is frozen, collection resumed


def test_the_entry_point_that_cannot_read_its_rules_answers_503_and_never_allows():
    events = [function_url_event("/orders", iam=role_session("orders-service"))]
    with ssm_stub(error_answer(400, "AccessDeniedException", "not authorized to perform ssm:GetParameters")) as stub:
        child = _cold_start({ACCESS_PARAMETERS_ENV: "p0,p1", "AWS_ENDPOINT_URL_SSM": stub.url}, events)
    (answer,) = child["answers"]
    assert answer["statusCode"] == 503 and answer["headers"]["Retry-After"] == "1"
    assert "cannot read its access rules" in answer["body"] and "AccessDeniedException" in answer["body"]
    assert len(stub.seen) == 1  # denied: not a failure asking again at once would cure


def test_the_entry_point_throttled_at_cold_start_answers_503_then_reads_its_rules():
    throttled = error_answer(400, "ThrottlingException", "Rate exceeded")
    read = values_answer(RULES)
    events = [function_url_event("/orders", iam=role_session("someone"))] * 2
    with ssm_stub(
        lambda seen: throttled(seen) if len(stub.seen) <= timing.SSM_COLD_START_ATTEMPTS else read(seen)
    ) as stub:
        # 2 s: the first request must come within the pause after the cold start's reads (the child's imports between
        # them took over 0.3 s on a loaded machine, and the request asked again, finding the rules).
        child = _cold_start({ACCESS_PARAMETERS_ENV: "p0,p1", "AWS_ENDPOINT_URL_SSM": stub.url}, events, pause=2.0)
    unavailable, refused = child["answers"]
    assert unavailable["statusCode"] == 503 and "ThrottlingException" in unavailable["body"]
    assert refused["statusCode"] == 403 and "may not issue key 'orders'" in refused["body"]  # the rules, read
    # Both cold-start attempts throttled; the first request within the pause not asked again; the second read them.
    assert len(stub.seen) == timing.SSM_COLD_START_ATTEMPTS + 1
