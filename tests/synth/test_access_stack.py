"""The construct's side of access rules and of the security gate (docs/how-to/access-rules.md,
docs/reference/construct.md): the grants' policies and rules, where the rules are stored, the refusals at synthesis,
and `encryption_key`. One stack is synthesised for the module (Template.from_stack costs ~10 s)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template

from access_support import FakeSsm, role_session, user
from moto_deployment import COUNTER_TABLE, IDEMPOTENCY_TABLE, SERIES_TABLE, function_client
from tickets.access import ACCESS_DIGEST_ENV, ACCESS_PARAMETERS_ENV, MAX_RULES_PARAMETERS, RULES_PARAMETER_BYTES
from tickets.access.store import StoredRules
from tickets.app import create_app
from tickets.settings import WORKERS_TABLE_ENV
from tickets_cdk import TicketService
from tickets_cdk.ledger_check import LEDGER_PATH_CONTEXT
from tickets_cdk.service import WORKERS_ACTIONS
from tickets_deploy.access import parse_rules
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LedgerFile, init_ledger, record, to_text

# 50 literal principals (one role per service of a large organisation), as cdk.json would list them.
MANY = {f"arn:aws:iam::111122223333:role/platform/service-{n:02d}": {"issue": [f"svc{n:02d}-*"]} for n in range(50)}
GRANTED_ROLES = 60  # and as many roles again granted in the app, whose ARNs are deploy-time tokens


class Synthesised:
    def __init__(self, ledger: Path) -> None:
        app = App(context={LEDGER_PATH_CONTEXT: str(ledger)})
        stack = Stack(app, "Shop", env=Environment(region="eu-west-1", account="111122223333"))
        self.key = kms.Key(stack, "TicketsKey", enable_key_rotation=True)
        self.service = TicketService(
            stack,
            "Invoices",
            series={"invoices": {"start": 1, "period": "yearly", "format": "INV-{series}-{n}"}},
            workers={"snowflake": {"size": 1024, "ttlSeconds": 60}},
            access={"o-a1b2c3d4e5": {"read": ["*"]}, "444455556666": {"issue": ["partner-*"]}, **MANY},
            encryption_key=self.key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.orders = iam.Role(stack, "OrdersRole", assumed_by=iam.AccountRootPrincipal())
        self.billing = iam.Role(stack, "BillingRole", assumed_by=iam.AccountRootPrincipal())
        self.auditor = iam.User(stack, "Auditor")
        self.service.grant_issue(self.orders, keys=["orders", "orders-*"])
        self.service.grant_series(self.billing, keys=["invoices"])
        self.service.grant_read(self.billing, keys=["invoices"])
        self.service.grant_void(self.auditor)  # no keys: every key, written "*"
        self.fleet = iam.Role(stack, "FleetRole", assumed_by=iam.AccountRootPrincipal())
        self.service.grant_workers(self.fleet, ["snowflake"])
        for n in range(GRANTED_ROLES):
            self.service.grant_issue(iam.Role(stack, f"Team{n}", assumed_by=iam.AccountRootPrincipal()), keys=["t"])
        self.stack = stack
        init_ledger(ledger, self.service.config)  # a new deployment's ledger (python -m tickets_cdk init)
        self.template = Template.from_stack(stack)
        self.resources: dict[str, Any] = self.template.to_json()["Resources"]


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory) -> Synthesised:
    return Synthesised(tmp_path_factory.mktemp("access-ledger") / "tickets.lock.json")


def _logical_id(synthesised: Synthesised, construct: Any) -> str:
    return synthesised.stack.get_logical_id(construct.node.default_child)


def _rules_parameters(synthesised: Synthesised) -> list[tuple[str, Any]]:
    parameters = synthesised.template.find_resources("AWS::SSM::Parameter")
    return sorted((logical_id, resource["Properties"]["Value"]) for logical_id, resource in parameters.items())


def _resolved(value: Any, arns: dict[str, str]) -> str:
    """A parameter's value as CloudFormation would resolve it, with these ARNs for the roles' GetAtts."""
    if isinstance(value, str):
        return value
    (parts,) = value.values()  # {"Fn::Join": ["", [...]]}
    return "".join(part if isinstance(part, str) else arns[part["Fn::GetAtt"][0]] for part in parts[1])


def _all_rules(synthesised: Synthesised, arns: dict[str, str]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for _, value in _rules_parameters(synthesised):
        merged.update(json.loads(_resolved(value, arns)))
    return merged


def _role_arns(synthesised: Synthesised, longest: bool = False) -> dict[str, str]:
    """Each role's and user's ARN as CloudFormation may resolve it; `longest`: the longest it can be (a name
    CloudFormation generates has up to 64 characters; these have no path)."""
    kinds = {"AWS::IAM::Role": "role", "AWS::IAM::User": "user"}
    return {
        logical_id: (
            f"arn:aws-us-gov:iam::111122223333:{kinds[resource['Type']]}/{'n' * 64}"
            if longest
            else f"arn:aws:iam::111122223333:{kinds[resource['Type']]}/{logical_id[:64]}"
        )
        for logical_id, resource in synthesised.resources.items()
        if resource["Type"] in kinds
    }


def test_grants_give_both_invoke_actions_through_the_url_and_add_the_grantee_s_rule(synthesised):
    function = _logical_id(synthesised, synthesised.service.function)
    for grantee in (synthesised.orders, synthesised.billing, synthesised.auditor, synthesised.fleet):
        policies = [
            resource["Properties"]
            for resource in synthesised.template.find_resources("AWS::IAM::Policy").values()
            if {"Ref": _logical_id(synthesised, grantee)}
            in resource["Properties"].get("Roles", []) + resource["Properties"].get("Users", [])
        ]
        statements = [s for policy in policies for s in policy["PolicyDocument"]["Statement"]]
        assert {(s["Action"], json.dumps(s["Condition"], sort_keys=True)) for s in statements} == {
            ("lambda:InvokeFunctionUrl", json.dumps({"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}})),
            ("lambda:InvokeFunction", json.dumps({"Bool": {"lambda:InvokedViaFunctionUrl": "true"}})),
        }
        assert all(s["Resource"] == {"Fn::GetAtt": [function, "Arn"]} for s in statements)
    arns = _role_arns(synthesised)
    rules = _all_rules(synthesised, arns)
    orders, billing, auditor, fleet = (
        arns[_logical_id(synthesised, grantee)]
        for grantee in (synthesised.orders, synthesised.billing, synthesised.auditor, synthesised.fleet)
    )
    assert rules[orders] == {"issue": ["orders", "orders-*"]}
    assert rules[billing] == {"read": ["invoices"], "series": ["invoices"]}
    assert rules[auditor] == {"void": ["*"]}
    assert rules[fleet] == {"workers": ["snowflake"]}  # grant_workers
    assert rules["o-a1b2c3d4e5"] == {"read": ["*"]}
    assert len(rules) == 2 + len(MANY) + 4 + GRANTED_ROLES
    parse_rules(rules, "access")  # what the function will read is valid rules


def test_the_rules_fit_in_standard_ssm_parameters_the_function_alone_reads(synthesised):
    parameters = _rules_parameters(synthesised)
    assert 1 < len(parameters) <= MAX_RULES_PARAMETERS
    # Whatever the granted roles' ARNs turn out to be (here the longest they can be), each value fits.
    longest = _role_arns(synthesised, longest=True)
    for _, value in parameters:
        assert len(_resolved(value, longest).encode()) <= RULES_PARAMETER_BYTES
    function = synthesised.template.find_resources("AWS::Lambda::Function")[
        _logical_id(synthesised, synthesised.service.function)
    ]
    environment = function["Properties"]["Environment"]["Variables"]
    names = environment[ACCESS_PARAMETERS_ENV]["Fn::Join"][1]
    assert [part["Ref"] for part in names if isinstance(part, dict)] == [logical_id for logical_id, _ in parameters]
    assert re.fullmatch(r"[0-9a-f]{16}", environment[ACCESS_DIGEST_ENV])
    assert len(json.dumps(environment)) < 4096
    role = _logical_id(synthesised, synthesised.service.role)
    (policy,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesised.template.find_resources("AWS::IAM::Policy").values()
        if p["Properties"].get("Roles") == [{"Ref": role}]
    ]
    read = [s for s in policy if "ssm:GetParameters" in s["Action"]]
    assert len(read) == len(parameters)
    for statement in read:  # each on one of the rules' parameters, none on "*"
        assert "*" not in json.dumps(statement["Resource"]) or "parameter" in json.dumps(statement["Resource"])


# Actions for which IAM's service authorization reference lists no resource type: they apply only on "*", so
# granted on an ARN they grant nothing (and hide what the policy really allows).
ONLY_ON_EVERY_RESOURCE = {"ssm:DescribeParameters", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_every_action_is_granted_only_where_it_applies(synthesised):
    statements = [
        statement
        for policy in synthesised.template.find_resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    granted: set[str] = set()
    for statement in statements:
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        granted.update(actions)
        if set(actions) & ONLY_ON_EVERY_RESOURCE:
            assert statement["Resource"] == "*", statement
    # The function reads its rules with GetParameters (tickets/access/store.py) and makes no other SSM call.
    assert {action for action in granted if action.startswith("ssm:")} == {"ssm:GetParameters"}
    assert "xray:PutTraceSegments" in granted  # the check above saw the function's own policy


def test_the_digest_changes_with_the_rules_only():
    def digest(access: dict[str, Any]) -> str:
        stack = Stack(App(), "S", env=Environment(region="eu-west-1"))
        service = TicketService(stack, "T", access=access)
        resolved = stack.resolve(service.function.node.default_child._cfn_properties)  # type: ignore[attr-defined]
        return str(stack.resolve(resolved)["environment"]["variables"][ACCESS_DIGEST_ENV])

    one = {"111122223333": {"issue": ["a"]}}
    assert digest(one) == digest(dict(one))
    assert digest(one) != digest({"111122223333": {"issue": ["a", "b"]}})


def test_every_table_and_the_log_group_use_the_customer_managed_key(synthesised):
    key = _logical_id(synthesised, synthesised.key)
    tables = synthesised.template.find_resources("AWS::DynamoDB::Table")
    assert len(tables) == 4  # counters, idempotency, series, workers
    for table in tables.values():
        assert table["Properties"]["SSESpecification"] == {
            "KMSMasterKeyId": {"Fn::GetAtt": [key, "Arn"]},
            "SSEEnabled": True,
            "SSEType": "KMS",
        }
    (log_group,) = synthesised.template.find_resources("AWS::Logs::LogGroup").values()
    assert log_group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
    policy = synthesised.resources[key]["Properties"]["KeyPolicy"]["Statement"]
    (logs,) = [s for s in policy if s.get("Principal", {}).get("Service") == "logs.eu-west-1.amazonaws.com"]
    assert "kms:GenerateDataKey*" in logs["Action"] and "kms:Decrypt*" in logs["Action"]
    assert logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"] == {
        "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":logs:eu-west-1:111122223333:log-group:*"]]
    }


def test_the_checks_that_do_not_apply_are_suppressed_on_the_function_with_reasons(synthesised):
    function = synthesised.resources[_logical_id(synthesised, synthesised.service.function)]
    skipped = {entry["id"]: entry["comment"] for entry in function["Metadata"]["checkov"]["skip"]}
    assert set(skipped) == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"}
    assert all(len(reason) > 60 for reason in skipped.values())
    assert {rule["id"] for rule in function["Metadata"]["cfn_nag"]["rules_to_suppress"]} == {"W89", "W92"}
    # Nothing else is suppressed: the tables and the log group carry no skip.
    for resource in synthesised.resources.values():
        if resource["Type"] in ("AWS::DynamoDB::Table", "AWS::Logs::LogGroup"):
            assert "checkov" not in resource.get("Metadata", {})
    # With reserved concurrency set, its check applies and passes: no suppression.
    stack = Stack(App(), "S", env=Environment(region="eu-west-1"))
    capped = TicketService(stack, "T", reserved_concurrency=20)
    metadata = capped.function.node.default_child.get_metadata("checkov")  # type: ignore[union-attr]
    assert "CKV_AWS_115" not in {entry["id"] for entry in metadata["skip"]}


def _new_service(**props: Any) -> TicketService:
    return TicketService(Stack(App(), "Shop", env=Environment(region="eu-west-1")), "Orders", **props)


@pytest.mark.parametrize(
    "props, message",
    [
        ({"auth": "NONE", "access": {"*": {"issue": ["*"]}}}, "access: needs auth AWS_IAM"),
        ({"access": {"111122223333": {"write": ["a"]}}}, "unknown operation 'write'"),
        ({"access": {"arn:aws:iam::1:role/x": {"issue": ["a"]}}}, "the principal must be"),
        ({"access": {"111122223333": {"issue": ["a*b"]}}}, "is not a key"),
        ({"access": {"111122223333": {}}}, "must name at least one operation"),
    ],
)
def test_malformed_access_is_refused_when_the_construct_is_made(props, message):
    with pytest.raises(ValueError, match=re.escape(message)) as refused:
        _new_service(**props)
    assert str(refused.value).startswith("TicketService Shop/Orders: access")


def test_a_grant_the_rules_cannot_name_or_enforce_is_refused_with_a_message():
    open_service = _new_service()
    role = iam.Role(Stack.of(open_service), "R", assumed_by=iam.AccountRootPrincipal())
    open_service.grant_issue(role)  # as before: no rules, every invoker may do everything
    with pytest.raises(ValueError, match="would limit nothing: this service has no access rules"):
        open_service.grant_issue(role, keys=["orders"])
    ruled = _new_service(access={})
    with pytest.raises(ValueError, match="has no role or user ARN for the access rules to name"):
        ruled.grant_read(iam.AccountRootPrincipal())
    with pytest.raises(ValueError, match="is not a key"):
        ruled.grant_issue(iam.Role(Stack.of(ruled), "R", assumed_by=iam.AccountRootPrincipal()), keys=["_x"])
    with pytest.raises(ValueError, match="keys must be a list"):
        ruled.grant_issue(iam.Role(Stack.of(ruled), "R2", assumed_by=iam.AccountRootPrincipal()), keys="orders")


def test_rules_are_not_permanent_the_ledger_never_refuses_a_change_of_them():
    before = parse_config({"regions": {"eu-west-1": 0}, "access": {"111122223333": {"issue": ["*"]}}})
    after = parse_config({"regions": {"eu-west-1": 0}, "access": {"o-a1b2c3d4e5": {"read": ["x"]}}})
    ledger = record(before, None)
    assert record(after, ledger) == ledger  # nothing of the rules is recorded, nothing refused
    assert record(parse_config({"regions": {"eu-west-1": 0}}), ledger) == ledger
    assert "111122223333" not in to_text(LedgerFile(services={"tickets": ledger}, versions=()))


def test_the_synthesised_rules_decide_real_requests_as_written(synthesised, deploy):
    """The stack's parameters, as CloudFormation resolves them, read by the function as it reads SSM: requests
    from role sessions, a user, another account and an organization answer as the rules say, and a refusal
    writes nothing."""
    arns = _role_arns(synthesised)
    values = {logical_id: _resolved(value, arns) for logical_id, value in _rules_parameters(synthesised)}
    region = deploy({"regions": {"us-east-1": 0}, "series": {"invoices": {"start": 1, "period": "yearly"}}})
    region._app = create_app(
        region.settings,
        function_client("us-east-1"),
        COUNTER_TABLE,
        IDEMPOTENCY_TABLE,
        series_table=SERIES_TABLE,
        access=StoredRules(FakeSsm(values), list(values)),
    )
    orders, billing, auditor = (
        arns[_logical_id(synthesised, grantee)]
        for grantee in (synthesised.orders, synthesised.billing, synthesised.auditor)
    )
    orders_session = role_session(orders.rsplit("/", 1)[1])
    billing_session = role_session(billing.rsplit("/", 1)[1])
    someone = role_session("someone")
    expected = [
        ("GET", "/orders-eu", orders_session, 200),
        ("GET", "/invoices", orders_session, 403),
        ("POST", "/_series/invoices", billing_session, 200),
        ("GET", "/_series/invoices/journal?series=2026", billing_session, 200),
        ("GET", "/svc07-x", role_session("service-07"), 200),  # a literal rule's role, its path not in the ARN
        ("GET", "/svc07-x", role_session("service-08"), 403),
        ("GET", "/partner-1", role_session("any", account="444455556666"), 200),
        ("GET", "/orders", role_session("any", account="444455556666"), 403),
        ("GET", "/_counters/partner-1", role_session("any", account="555566667777", org="o-a1b2c3d4e5"), 200),
        ("GET", "/partner-1", role_session("any", account="555566667777", org="o-a1b2c3d4e5"), 403),
        ("GET", "/_counters/orders", someone, 403),
    ]
    for method, path, iam_context, status in expected:
        headers = {"Idempotency-Key": f"k-{path}-{status}"} if method == "POST" else None
        before = (region.items(), region.items(SERIES_TABLE))
        path, _, series = path.partition("?series=")
        query = {"series": series} if series else None
        answer = region.call(path, method, iam=iam_context, headers=headers, query=query)
        assert answer.status == status, (method, path, iam_context["userArn"], answer)
        if status == 403:
            assert (region.items(), region.items(SERIES_TABLE)) == before
    voided = region.post(
        "/_series/invoices/void",
        body=json.dumps({"series": "2026", "ticket": 1, "reason": "typo"}),
        iam=user(auditor),
    )
    assert voided.status != 403, voided


@pytest.mark.slow
def test_worker_pools_get_their_table_its_two_calls_and_grant_workers_a_rule(synthesised):
    """The workers table (the series table's shape, a fixed name), on which the function may only UpdateItem and
    Query (tickets/workers/store.py), and its name in the function's environment (grant_workers' rule: above)."""
    workers_id = "InvoicesWorkersTable"  # the construct's id and WorkersTable, as the series table's is
    table = synthesised.resources[workers_id]
    assert table["Properties"]["TableName"] == "tickets-counters-workers"
    assert [key["AttributeName"] for key in table["Properties"]["KeySchema"]] == ["pk", "n"]
    assert table["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    statements = [
        statement
        for resource in synthesised.template.find_resources("AWS::IAM::Policy").values()
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if workers_id in json.dumps(statement["Resource"])
    ]
    assert [sorted(statement["Action"]) for statement in statements] == [sorted(WORKERS_ACTIONS)]
    [function] = synthesised.template.find_resources("AWS::Lambda::Function").values()
    assert function["Properties"]["Environment"]["Variables"][WORKERS_TABLE_ENV] == {"Ref": workers_id}
