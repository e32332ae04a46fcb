"""The IAM authorizer block a direct invocation can forge (docs/how-to/access-rules.md): a Function URL with
AWS_IAM auth writes `requestContext.authorizer.iam` itself, but `lambda:InvokeFunction` hands the function any
event, that block included. Through the real handler on real Function URL events (tests/fixtures, moto): an
authorizer no Function URL sends is a 403, never a 500, whatever the rules and the request; a rule, an account's
or `*`, names only a well-formed signer (an account id alone names nobody)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access_support import ACCOUNT, role_session, user
from moto_deployment import FakeLambdaContext, Region, function_url_event

OTHER_ACCOUNT = "444455556666"
ACCOUNT_RULE = {ACCOUNT: {"issue": ["*"], "read": ["*"]}}
EVERYONE_RULE = {"*": {"issue": ["*"], "read": ["*"]}}
AUTHORIZER_EXAMPLES = 300  # a few seconds on moto; each example is one request


def answer(api: Region, authorizer: Any, path: str = "/orders", headers: dict[str, str] | None = None) -> Any:
    """The function's answer to a Function URL event whose requestContext.authorizer is `authorizer`."""
    event = function_url_event(path, "POST", headers=headers)
    event["requestContext"]["authorizer"] = copy.deepcopy(authorizer)
    result = api.handler.lambda_handler(event, FakeLambdaContext())
    return result["statusCode"], json.loads(result["body"])


@pytest.mark.parametrize(
    "iam, allowed",
    [
        ({"accountId": ACCOUNT}, False),  # an account and nobody in it: no Function URL sends this
        ({"accountId": ACCOUNT, "principalOrgId": "o-a1b2c3d4e5", "callerId": "AIDAEXAMPLE"}, False),
        ({**role_session("orders-service", account=OTHER_ACCOUNT), "accountId": ACCOUNT}, False),  # another's signer
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:iam::{ACCOUNT}:role/orders-service"}, False),  # a role signs not
        ({"accountId": "1111", "userArn": "arn:aws:iam::1111:root"}, False),
        (role_session("orders-service"), True),
        (user(f"arn:aws:iam::{ACCOUNT}:user/ops/alice"), True),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:iam::{ACCOUNT}:root", "callerId": ACCOUNT}, True),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:sts::{ACCOUNT}:federated-user/alice"}, True),
    ],
)
def test_an_account_rule_names_only_a_well_formed_signer_of_that_account(deploy, iam, allowed):
    api = deploy({"regions": {"us-east-1": 0}, "access": ACCOUNT_RULE})
    status, body = answer(api, {"iam": iam})
    assert (status, body.get("error")) == ((200, None) if allowed else (403, "forbidden")), body


def test_star_names_only_a_signer_too(deploy):
    api = deploy({"regions": {"us-east-1": 0}, "access": EVERYONE_RULE})
    assert answer(api, {"iam": {"accountId": ACCOUNT}})[0] == 403
    assert answer(api, {"iam": role_session("anyone", account=OTHER_ACCOUNT)})[0] == 200


MALFORMED = [
    "iam",
    ["iam"],
    7,
    {},
    {"iam": None},
    {"iam": "arn:aws:iam::111122223333:root"},
    {"iam": [role_session("orders-service")]},
    {"iam": {**role_session("orders-service"), "userArn": 5}},
    {"iam": {**role_session("orders-service"), "accountId": ["111122223333"]}},
    {"iam": {**role_session("orders-service"), "principalOrgId": {"o": "o-a1b2c3d4e5"}}},
    {"iam": {**role_session("orders-service"), "callerId": True}},
]


@pytest.mark.parametrize("rules", [None, ACCOUNT_RULE], ids=["no rules", "rules"])
@pytest.mark.parametrize("authorizer", MALFORMED)
def test_an_authorizer_no_function_url_sends_is_403_before_any_dynamodb_call(deploy, rules, authorizer):
    """With or without rules, with an Idempotency-Key (the caller scopes its record) or on a series (the caller
    is journaled): a 403 that says what is wrong, and the function reads nothing."""
    api = deploy({"regions": {"us-east-1": 0}, **({"access": rules} if rules else {})})
    for path, headers in (("/orders", None), ("/orders", {"idempotency-key": "k-1"}), ("/_counters/orders", None)):
        with api.dynamodb_calls() as calls:
            status, body = answer(api, authorizer, path, headers)
        assert (status, body["error"]) == (403, "forbidden"), body
        assert "requestContext.authorizer" in body["message"] and calls == []


def test_no_authorizer_is_an_unsigned_caller_as_with_auth_none(deploy):
    assert answer(deploy({"regions": {"us-east-1": 0}}), None)[0] == 200
    assert answer(deploy({"regions": {"us-east-1": 0}, "access": EVERYONE_RULE}), None)[0] == 403


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=3),
    max_leaves=8,
)
FIELD_VALUES = st.one_of(
    JSON,
    st.sampled_from([ACCOUNT, OTHER_ACCOUNT, "", "o-a1b2c3d4e5", f"arn:aws:iam::{ACCOUNT}:root"]),
    st.sampled_from([role_session("x")["userArn"], f"arn:aws:iam::{ACCOUNT}:user/a", "AROAEXAMPLE:s"]),
)
IAM_BLOCKS = st.dictionaries(
    st.sampled_from(["accountId", "userArn", "principalOrgId", "callerId", "userId", "accessKey", "cognitoIdentity"]),
    FIELD_VALUES,
    max_size=7,
)
AUTHORIZERS = st.one_of(JSON, st.builds(lambda iam: {"iam": iam}, IAM_BLOCKS), st.builds(lambda a: {"iam": a}, JSON))


@settings(max_examples=AUTHORIZER_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    authorizer=AUTHORIZERS,
    rules=st.sampled_from([None, ACCOUNT_RULE, EVERYONE_RULE]),
    idempotency_key=st.sampled_from([None, "fuzz-1"]),
)
def test_any_authorizer_is_answered_200_or_403_never_a_500(deploy, authorizer, rules, idempotency_key):
    api = deploy({"regions": {"us-east-1": 0}, **({"access": rules} if rules else {})})
    headers = {"idempotency-key": idempotency_key} if idempotency_key else None
    status, body = answer(api, authorizer, "/fuzzed", headers)
    assert status in (200, 403), (status, body)
    iam = authorizer.get("iam") if isinstance(authorizer, dict) else None
    if status == 200 and rules is not None:  # a rule named it: a signer, in the block's own account
        assert isinstance(iam, dict) and iam["userArn"].split(":")[4] == iam["accountId"], authorizer
    if status == 403:
        assert body["error"] == "forbidden"
