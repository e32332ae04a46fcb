"""Access rules through the real handler on real Function URL events (docs/how-to/access-rules.md).

Every principal kind (a role through an assumed-role session, a user, an account, an organization, `*`)
x every operation x every pattern kind (exact, prefix*, *), allowed and refused; a refusal makes no DynamoDB
call; a replay is refused once the rights are gone; a property test holds the decision to a matcher
written here; the stored rules, read as the function reads them, refuse everything when unreadable.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from botocore.stub import Stubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access_support import ACCOUNT, FakeSsm, role_session, user
from moto_deployment import Region, function_client
from tickets.access import Identity, Rules
from tickets.access.store import StoredRules
from tickets.app import create_app
from tickets.errors import Unavailable
from tickets_deploy.access import AccessRuleError, parse_rules

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)
MOTO_ONLY = {
    "test_a_function_that_cannot_read_its_rules_refuses_with_503_and_tries_again_later"
}  # an app on moto's client of its own

OTHER_ACCOUNT = "444455556666"
ORG = "o-a1b2c3d4e5"
INVOICES = {"start": 1, "period": "yearly", "format": "INV-{series}-{n}"}
SERIES_KEYS = ("orders", "orders-eu", "refunds")


# principal kind -> (the rule's principal, a caller it names, a caller it does not name)
PRINCIPALS: dict[str, tuple[str, dict, dict]] = {
    "role": (
        f"arn:aws:iam::{ACCOUNT}:role/teams/orders-service",  # a path, which the session's ARN lacks
        role_session("orders-service", session="i-0abc"),
        role_session("orders-service", account=OTHER_ACCOUNT),  # the same name in another account
    ),
    "user": (
        f"arn:aws:iam::{ACCOUNT}:user/ops/alice",
        user(f"arn:aws:iam::{ACCOUNT}:user/ops/alice"),
        user(f"arn:aws:iam::{ACCOUNT}:user/ops/bob"),
    ),
    "account": (OTHER_ACCOUNT, role_session("anything", account=OTHER_ACCOUNT), role_session("anything")),
    "organization": (ORG, role_session("billing", org=ORG), role_session("billing", org="o-zzzzzzzzzz")),
    "*": ("*", role_session("whoever", account="999988887777"), {}),  # {}: no signer at all
}
# pattern kind -> (the pattern, a key it matches, a key it does not match; None: it matches every key)
PATTERNS: dict[str, tuple[str, str, str | None]] = {
    "exact": ("orders", "orders", "orders-eu"),
    "prefix": ("orders-*", "orders-eu", "orders"),
    "every key": ("*", "refunds", None),
}


def request(api: Region, operation: str, key: str, iam: dict) -> Any:
    """One request of `operation` on `key`, signed by `iam`."""
    if operation == "issue":
        return api.get(f"/{key}", iam=iam)
    if operation == "read":
        return api.get(f"/_counters/{key}", iam=iam)
    if operation == "series":
        return api.post(f"/_series/{key}", headers={"Idempotency-Key": str(uuid.uuid4())}, iam=iam)
    body = json.dumps({"series": "2026", "ticket": 1, "reason": "issued in error"})
    return api.post(f"/_series/{key}/void", body=body, iam=iam)


def deployed(deploy, access: dict) -> Region:
    return deploy(
        {
            "regions": {"us-east-1": 0},
            "series": {key: INVOICES for key in SERIES_KEYS},
            "access": access,
        }
    )


def assert_forbidden(answer: Any, operation: str, key: str) -> None:
    assert answer.status == 403, answer
    assert answer.body["error"] == "forbidden"
    # Names what was asked (the operation and the key), nothing of anyone's rules.
    assert f"may not {operation} key {key!r}" in answer.body["message"]
    assert "orders-*" not in answer.body["message"] or key.startswith("orders-*")


@pytest.mark.parametrize("pattern_kind", PATTERNS)
@pytest.mark.parametrize("operation", ["issue", "series", "void", "read"])
@pytest.mark.parametrize("principal_kind", PRINCIPALS)
def test_each_principal_kind_operation_and_pattern_is_allowed_exactly_as_the_rules_say(
    deploy, principal_kind, operation, pattern_kind
):
    principal, named, not_named = PRINCIPALS[principal_kind]
    pattern, matching_key, other_key = PATTERNS[pattern_kind]
    api = deployed(deploy, {principal: {operation: [pattern]}})
    with api.dynamodb_calls() as calls:
        allowed = request(api, operation, matching_key, named)
    assert allowed.status != 403, allowed
    # void and read answer 404 for a number or counter never issued: they got past the rules to DynamoDB
    assert allowed.status == {"issue": 200, "series": 200, "void": 404, "read": 404}[operation], allowed
    assert calls, "an allowed request reaches DynamoDB"

    refusals = [(operation, matching_key, not_named)]  # another caller
    if other_key is not None:
        refusals.append((operation, other_key, named))  # another key
    other_operation = "read" if operation != "read" else "issue"
    refusals.append((other_operation, matching_key, named))  # another operation
    for refused_operation, key, iam in refusals:
        before = api.items()
        with api.dynamodb_calls() as calls:
            answer = request(api, refused_operation, key, iam)
        assert_forbidden(answer, refused_operation, key)
        assert calls == [], "a refusal makes no DynamoDB call"
        assert api.items() == before


def test_the_default_key_is_a_key_like_any_other(deploy):
    api = deployed(deploy, {"*": {"issue": ["default"]}})
    assert api.get("/", iam=role_session("a")).status == 200
    assert_forbidden(api.get("/", query={"key": "orders"}, iam=role_session("a")), "issue", "orders")
    assert_forbidden(api.post("/_blocks/orders", query={"count": "10"}, iam=role_session("a")), "issue", "orders")
    assert api.post("/_blocks/default", query={"count": "10"}, iam=role_session("a")).status == 200


def test_health_needs_no_rule(deploy):
    api = deployed(deploy, {})
    assert api.get("/_health", iam={}).status == 200
    assert_forbidden(api.get("/orders", iam=role_session("a")), "issue", "orders")


def test_without_rules_every_invoker_may_do_everything(deploy):
    api = deploy({"regions": {"us-east-1": 0}})
    assert api.get("/orders", iam=role_session("a", account=OTHER_ACCOUNT)).status == 200
    assert api.get("/_counters/orders", iam={}).status == 200


def test_a_refusal_makes_no_dynamodb_call_on_a_stubbed_client(aws, deploy):
    """A botocore Stubber with no responses queued: any call the function made would fail the request."""
    api = deployed(deploy, {OTHER_ACCOUNT: {"issue": ["orders"]}})
    client = function_client("us-east-1")
    with Stubber(client) as stub:
        for path in ("/refunds", "/_counters/orders", "/_blocks/orders"):
            answer = api.get(path, iam=role_session("x"), headers={"Idempotency-Key": "k-1"})
            assert answer.status == 403, answer
        stub.assert_no_pending_responses()


def test_a_replay_by_a_caller_whose_rights_were_removed_is_refused(deploy):
    region = deployed(deploy, {f"arn:aws:iam::{ACCOUNT}:role/orders-service": {"issue": ["orders"]}})
    caller = role_session("orders-service")
    first = region.get("/orders", headers={"Idempotency-Key": "order-42"}, iam=caller)
    assert first.status == 200
    assert region.get("/orders", headers={"Idempotency-Key": "order-42"}, iam=caller).body == first.body  # a replay
    # A deploy takes the role's rights away (another execution environment, with the new rules).
    region.config = region.config.__class__(**{**region.config.__dict__, "access": parse_rules({}, "access")})
    region._app = None
    with region.dynamodb_calls() as calls:
        replay = region.get("/orders", headers={"Idempotency-Key": "order-42"}, iam=caller)
    assert_forbidden(replay, "issue", "orders")
    assert calls == []


def test_the_forbidden_metric_counts_refusals(deploy, capsys):
    api = deployed(deploy, {})
    capsys.readouterr()
    assert api.get("/orders", iam=role_session("x")).status == 403
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    metrics = [line for line in lines if "_aws" in line]
    assert [line.get("Forbidden") for line in metrics] == [[1.0]]
    assert metrics[0]["code"] == "forbidden"


# --- the decision against a reference matcher ---------------------------------------------------------------


def reference_allows(rules: dict[str, dict[str, list[str]]], iam: dict, operation: str, key: str) -> bool:
    """docs/how-to/access-rules.md's matching, written again from the doc: a reference to hold the function to."""
    arn, account, org = iam.get("userArn") or "", iam.get("accountId") or "", iam.get("principalOrgId") or ""
    # Only a signer is named, by any rule: the ARN of a user, a role's session, the root or a federated user,
    # in the 12-digit account the block names.
    signer = re.fullmatch(
        r"arn:aws:(?:iam::(\d{12}):(?:user/.+|root)|sts::(\d{12}):(?:assumed-role/[^/]+/.+|federated-user/.+))", arn
    )
    is_signer = signer is not None and re.fullmatch(r"\d{12}", account) is not None and account in signer.groups()
    for principal, operations in rules.items():
        if not is_signer:
            named = False
        elif principal == "*":
            named = True
        elif principal.isdigit():
            named = principal == account
        elif principal.startswith("o-"):
            named = principal == org
        elif ":user/" in principal:
            named = principal == arn
        else:  # a role: its account and the last segment of its name; the session's ARN has no path
            role_account, role_name = principal.split(":")[4], principal.rsplit("/", 1)[1]
            session = re.fullmatch(r"arn:aws:sts::(\d{12}):assumed-role/([^/]+)/.+", arn)
            named = session is not None and session.groups() == (role_account, role_name)
        patterns = operations.get(operation, []) if named else []
        if any(key == p or (p.endswith("*") and key.startswith(p[:-1])) for p in patterns):
            return True
    return False


NAMES = st.sampled_from(["orders", "billing", "ops"])
ACCOUNTS = st.sampled_from([ACCOUNT, OTHER_ACCOUNT])
ORGS = st.sampled_from([ORG, "o-zzzzzzzzzz", None])
KEYS = st.sampled_from(["orders", "orders-eu", "orders-", "ordersx", "refunds", "default", "o"])
PRINCIPAL_VALUES = st.one_of(
    st.just("*"),
    ACCOUNTS,
    st.sampled_from([ORG, "o-zzzzzzzzzz"]),
    st.builds(lambda a, path, n: f"arn:aws:iam::{a}:role/{path}{n}", ACCOUNTS, st.sampled_from(["", "team/"]), NAMES),
    st.builds(lambda a, n: f"arn:aws:iam::{a}:user/{n}", ACCOUNTS, NAMES),
)
PATTERN_VALUES = st.sampled_from(["*", "orders", "orders-*", "orders*", "o*", "refunds", "default"])
RULES = st.dictionaries(
    PRINCIPAL_VALUES,
    st.dictionaries(
        st.sampled_from(["issue", "read"]), st.lists(PATTERN_VALUES, min_size=1, max_size=3, unique=True), min_size=1
    ),
    max_size=4,
)
CALLERS = st.one_of(
    st.builds(lambda n, a, o: role_session(n, account=a, org=o), NAMES, ACCOUNTS, ORGS),
    st.builds(lambda n, a: user(f"arn:aws:iam::{a}:user/{n}", account=a), NAMES, ACCOUNTS),
    st.builds(lambda a, o: {"accountId": a, "userArn": f"arn:aws:iam::{a}:root", "principalOrgId": o}, ACCOUNTS, ORGS),
    st.just({}),
    # What no Function URL sends, only a direct invocation: an account (and an organization) and no signer, or a
    # signer of another account than the block names.
    st.builds(lambda a, o: {"accountId": a, "principalOrgId": o}, ACCOUNTS, ORGS),
    st.builds(lambda n, a: {**role_session(n), "accountId": a}, NAMES, st.just(OTHER_ACCOUNT)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rules=RULES, iam=CALLERS, operation=st.sampled_from(["issue", "read"]), key=KEYS)
def test_the_function_decides_as_the_reference_matcher(deploy, rules, iam, operation, key):
    api = deploy({"regions": {"us-east-1": 0}, "access": rules})
    answer = request(api, operation, key, iam)
    assert (answer.status != 403) == reference_allows(rules, iam, operation, key), (answer, rules, iam)
    assert answer.status in (200, 403, 404), answer  # 404: a counter read before it issued


# --- the rules as the stack stores them -----------------------------------------------------------------------


def test_stored_rules_are_merged_from_every_parameter_and_read_once():
    ssm = FakeSsm({"p0": json.dumps({"*": {"read": ["*"]}}), "p1": json.dumps({ACCOUNT: {"issue": ["orders"]}})})
    rules = StoredRules(ssm, ["p0", "p1"])
    identity = Identity.of({"requestContext": {"authorizer": {"iam": role_session("a")}}})
    assert rules().allows(identity, "issue", "orders") and rules().allows(identity, "read", "x")
    assert not rules().allows(identity, "issue", "refunds")
    assert ssm.calls == 1


def test_a_function_that_cannot_read_its_rules_refuses_with_503_and_tries_again_later(deploy):
    now = [0.0]
    ssm = FakeSsm({"p0": json.dumps({"*": {"issue": ["*"]}})}, failures=1)
    stored = StoredRules(ssm, ["p0"], clock=lambda: now[0])
    api = deploy({"regions": {"us-east-1": 0}})
    api._app = create_app(
        api.settings, function_client("us-east-1"), "tickets-test", "tickets-idempotency-test", access=stored
    )
    with api.dynamodb_calls() as calls:
        answer = api.get("/orders", iam=role_session("a"))
    assert answer.status == 503 and answer.body["error"] == "unavailable"
    assert "access rules" in answer.body["message"] and calls == []
    assert api.get("/orders", iam=role_session("a")).status == 503 and ssm.calls == 1  # not asked again at once
    now[0] = 10.0
    assert api.get("/orders", iam=role_session("a")).status == 200 and ssm.calls == 2
    with pytest.raises(Unavailable):
        StoredRules(FakeSsm({}), ["missing"])()
    with pytest.raises(Unavailable):  # not rules at all
        StoredRules(FakeSsm({"p0": '["*"]'}), ["p0"])()


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"arn:aws:iam::111122223333:role/x": {"write": ["a"]}}, "unknown operation 'write'"),
        ({"arn:aws:iam::111122223333:role/x": {}}, "at least one operation"),
        ({"111122223333": {"issue": []}}, "non-empty list"),
        ({"111122223333": {"issue": ["a*b"]}}, "is not a key"),
        ({"111122223333": {"issue": ["_x"]}}, "is not a key"),
        ({"1111": {"issue": ["a"]}}, "the principal must be"),
        ({"arn:aws:sts::111122223333:assumed-role/x/s": {"issue": ["a"]}}, "the principal must be"),
        ({"o-short": {"issue": ["a"]}}, "the principal must be"),
        (["111122223333"], "must map principals"),
    ],
)
def test_malformed_rules_are_refused_naming_where(raw, message):
    with pytest.raises(AccessRuleError, match=re.escape(message)):
        parse_rules(raw, "tickets.access")


def test_rules_go_to_json_and_back_unchanged():
    rules = parse_rules({"*": {"read": ["*"]}, ORG: {"issue": ["a", "b-*"], "void": ["inv"]}}, "access")
    assert Rules.from_json(json.loads(json.dumps(rules.to_json()))) == rules


def test_a_counters_state_is_checked_against_the_key_it_reads_not_its_encoded_path(deploy):
    """`GET /_counters/orders%3Aeu` reads the key `orders:eu`; the rules are asked about that key."""
    caller = role_session("orders-service")
    api = deployed(
        deploy, {f"arn:aws:iam::{ACCOUNT}:role/orders-service": {"issue": ["orders:eu"], "read": ["orders:eu"]}}
    )
    assert api.get("/orders:eu", iam=caller).status == 200
    answer = api.get("/_counters/orders%3Aeu", iam=caller)
    assert answer.status == 200 and answer.body["key"] == "orders:eu"


def test_a_principal_written_twice_may_do_what_either_entry_allows():
    """A role named in the rules and granted by the construct: the grant's ARN is a token CloudFormation resolves
    to the same text, so the stored rules hold the principal twice, in one parameter or in two. Each entry grants
    what it says (a JSON object read into a dict kept only the last)."""
    role = f"arn:aws:iam::{ACCOUNT}:role/orders-service"
    ssm = FakeSsm(
        {
            "p0": f'{{"{role}":{{"issue":["orders"]}},"{role}":{{"read":["orders"]}}}}',
            "p1": json.dumps({role: {"series": ["invoices"]}}),
        }
    )
    rules = StoredRules(ssm, ["p0", "p1"])()
    identity = Identity.of({"requestContext": {"authorizer": {"iam": role_session("orders-service")}}})
    assert rules.allows(identity, "issue", "orders") and rules.allows(identity, "read", "orders")
    assert rules.allows(identity, "series", "invoices")
    assert not rules.allows(identity, "void", "invoices") and not rules.allows(identity, "issue", "refunds")
