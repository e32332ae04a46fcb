"""The synthesised stacks, from one synthesis per configuration per test session."""

from __future__ import annotations

import copy
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import App, FileSystem  # noqa: E402
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Capture, Match, Template  # noqa: E402
from linting import cfn_lint_errors

from app import main, synthesize  # noqa: E402
from installed import validation_findings, with_cdk_validation
from stacks.tickets_stack import add_stacks
from tickets import timing  # noqa: E402
from tickets.errors import TicketsError  # noqa: E402
from tickets.settings import Settings  # noqa: E402
from tickets_cdk.asset import PACKAGE  # noqa: E402
from tickets_cdk.powertools import POWERTOOLS_VERSION  # noqa: E402
from tickets_deploy.config import parse_config  # noqa: E402
from tickets_deploy.ledger import init_ledger, read_ledger, record  # noqa: E402
from tickets_deploy.regions import SERVED_REGIONS  # noqa: E402
from tickets_deploy.rules import MAX_TICKET  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

BIG_START = 2**63 - 1 - 5  # the last six tickets an int64 holds, written as a decimal string in cdk.json
FULL_CONFIG = {
    "tableName": "orders-tickets",
    "auth": "NONE",
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "strictKeys": True,
    "reservedConcurrency": 50,
    "corsOrigins": ["https://app.example.com"],
    "alarmEmail": "ops@example.com",
    "alarmDaysLeft": 14,
    "logRetentionDays": 90,
    "counters": {
        "orders": {"start": 5000, "shards": 2},
        "big": {"start": str(BIG_START), "max": "9223372036854775807"},
    },
    "compat": {"path": "counter"},
}


class Synthesised:
    """app.py's synthesis: the config read back from the app's context (which, as with the CDK CLI,
    has passed through Node), checked against and recorded in a ledger at `ledger_path`, which `make init`
    wrote for the same config."""

    def __init__(self, context: dict, outdir: Path, ledger_path: Path, template_regions: set[str] | None = None):
        self.app = App(context=context, outdir=str(outdir))
        self.ledger_path = ledger_path
        self.initial_ledger = init_ledger(ledger_path, parse_config(self.app.node.try_get_context("tickets")))
        self.stacks = synthesize(self.app, ledger_path)
        self.assembly = self.app.synth()  # the assembly synthesize() built, not a second synthesis
        self.outdir = outdir
        self.templates = {  # assertions' Templates (each costs a jsii round trip) of template_regions, default all
            region: Template.from_json(self.template_json(region))
            for region in self.stacks
            if template_regions is None or region in template_regions
        }

    def template_json(self, region: str) -> dict:
        return self.assembly.get_stack_by_name(self.stacks[region].stack_name).template


CDK_CONTEXT = json.loads((ROOT / "cdk.json").read_text())["context"]


@pytest.fixture(scope="session")
def deployed_default(tmp_path_factory) -> Synthesised:
    """What `cdk synth` builds from the repository's own cdk.json, after `make init`."""
    ledger = tmp_path_factory.mktemp("default-ledger") / "tickets.lock.json"
    return Synthesised(CDK_CONTEXT, tmp_path_factory.mktemp("default"), ledger)


@pytest.fixture(scope="session")
def two_regions(tmp_path_factory) -> Synthesised:
    """A new deployment with every option set, under the repository's feature flags."""
    ledger = tmp_path_factory.mktemp("two-regions-ledger") / "tickets.lock.json"
    return Synthesised({**CDK_CONTEXT, "tickets": FULL_CONFIG}, tmp_path_factory.mktemp("two-regions"), ledger)


# One app with a stack in every region the config accepts, so each template is linted for its own region.
EVERY_REGION_CONFIG = {
    "regions": {region: slot for slot, region in enumerate(sorted(SERVED_REGIONS))},
    "regionSlots": len(SERVED_REGIONS),
    "alarmEmail": "ops@example.com",
    "callers": ["111122223333", "arn:aws:iam::444455556666:role/orders/TicketsCaller"],
}


@pytest.fixture(scope="session")
def every_region(tmp_path_factory) -> Synthesised:
    ledger = tmp_path_factory.mktemp("every-region-ledger") / "tickets.lock.json"
    return Synthesised(
        {**CDK_CONTEXT, "tickets": EVERY_REGION_CONFIG},
        tmp_path_factory.mktemp("every-region"),
        ledger,
        template_regions={"us-east-1"},
    )


# Public, open to any key and any web page: synthesis says what that risks.
PUBLIC_CONFIG = {"auth": "NONE", "regions": {"us-east-1": 0}, "corsOrigins": ["*"]}


@pytest.fixture(scope="session")
def public(tmp_path_factory) -> Synthesised:
    ledger = tmp_path_factory.mktemp("public-ledger") / "tickets.lock.json"
    return Synthesised({**CDK_CONTEXT, "tickets": PUBLIC_CONFIG}, tmp_path_factory.mktemp("public"), ledger)


@pytest.fixture(scope="session")
def template(deployed_default) -> Template:
    return deployed_default.templates["us-east-1"]


def test_one_stack_per_region_pinned_to_its_region(two_regions):
    assert {region: stack.region for region, stack in two_regions.stacks.items()} == {
        "us-east-1": "us-east-1",
        "eu-west-1": "eu-west-1",
    }


def test_counter_table_is_on_demand_protected_and_retained(template):
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "KeySchema": [{"AttributeName": "counter", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "counter", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "DeletionProtectionEnabled": True,
            },
        },
    )
    # A global table's last-writer-wins replication would duplicate tickets.
    template.resource_count_is("AWS::DynamoDB::GlobalTable", 0)


def test_idempotency_table_has_ttl_and_pitr(template):
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "Properties": {
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "DeletionProtectionEnabled": True,
            },
        },
    )


def test_stateful_resources_keep_their_logical_ids(template):
    """Renaming these would make CloudFormation replace the tables: pinned on purpose."""
    tables = template.find_resources("AWS::DynamoDB::Table")
    assert set(tables) == {"TicketsTable", "TicketsIdempotencyTable"}
    assert tables["TicketsTable"]["Properties"]["KeySchema"][0]["AttributeName"] == "counter"


# Every resource of the shipped cdk.json's stack as the reference app built it before it used tickets_cdk
# (commit d8367c4): a changed logical id would make CloudFormation replace that resource in a deployed stack.
# Added since: CounterRunningOut (the headroom alarm).
DEPLOYED_LOGICAL_IDS = {
    "AlarmsCounterNearMaxDA0CA39D",
    "AlarmsCounterRunningOutC0CD6584",
    "AlarmsFunctionErrors8A553A4B",
    "AlarmsFunctionThrottles9E6847CC",
    "AlarmsIdempotencyTableThrottles349FD2BE",
    "AlarmsInternalErrorsC3E178E5",
    "AlarmsTableThrottlesE2AC0C12",
    "Dashboard7A714131",
    "ServiceFunction243F2A49",
    "ServiceFunctionFunctionUrl3E1F0936",
    "ServiceFunctionLogs04192AE0",
    "ServiceFunctionRoleDefaultPolicy9CD28641",
    "ServiceFunctionRoleFA71FED3",
    "ServiceInvokePolicy61346A23",
    "TicketsIdempotencyTable",
    "TicketsTable",
}


def test_every_resource_keeps_its_logical_id_and_the_outputs_add_the_ledger_version_and_the_dashboard(template):
    assert set(template.to_json()["Resources"]) == DEPLOYED_LOGICAL_IDS
    assert set(template.to_json()["Outputs"]) == {
        "DashboardName",
        "FunctionArn",
        "FunctionUrl",
        "InvokePolicyArn",
        "RegionSlot",
        "TableName",
        "TicketsLedgerVersion",
    }


def test_the_counter_table_has_the_configured_name_and_the_idempotency_table_a_generated_one(template, two_regions):
    """A fixed name: after `cdk destroy` (which retains the table) a redeploy fails on the existing table
    instead of creating an empty one that would start every counter again."""
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {"TableName": "tickets-counters", "KeySchema": [{"AttributeName": "counter", "KeyType": "HASH"}]},
    )
    for region in FULL_CONFIG["regions"]:
        tables = two_regions.templates[region].find_resources("AWS::DynamoDB::Table")
        assert tables["TicketsTable"]["Properties"]["TableName"] == "orders-tickets"
        assert "TableName" not in tables["TicketsIdempotencyTable"]["Properties"]


def test_synthesis_right_after_init_leaves_the_ledger_as_init_wrote_it(deployed_default, two_regions):
    for synthesised in (deployed_default, two_regions):
        assert read_ledger(synthesised.ledger_path) == synthesised.initial_ledger


def test_init_records_the_config_as_a_new_deployment(two_regions):
    assert two_regions.initial_ledger == record(parse_config(FULL_CONFIG), None)


def test_function_runtime_architecture_tracing_and_layer(template):
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Runtime": "python3.14",
            "Architectures": ["arm64"],
            "Handler": "tickets.handler.lambda_handler",
            "TracingConfig": {"Mode": "Active"},
            "Timeout": timing.FUNCTION_TIMEOUT_SECONDS,
        },
    )


def _powertools_pin() -> str:
    [pin] = re.findall(r"^aws-lambda-powertools==(\S+)$", (ROOT / "requirements-serve.txt").read_text(), re.M)
    return pin


def test_requirements_serve_pins_the_one_powertools_release_the_tests_run_with():
    assert importlib.metadata.version("aws-lambda-powertools") == _powertools_pin() == POWERTOOLS_VERSION
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert re.findall(r"^aws-lambda-powertools\S*$", dev, re.M) == ["aws-lambda-powertools[tracer]"]  # no 2nd pin


def test_the_function_takes_that_release_s_layer_from_its_public_ssm_parameter(template):
    """CloudFormation resolves Powertools' public parameter for the pinned release, runtime and architecture
    to that release's layer ARN in the stack's region: the layer and the tested package are one release."""
    parameter = f"/aws/service/powertools/python/arm64/python3.14/{_powertools_pin()}"
    template.has_resource_properties("AWS::Lambda::Function", {"Layers": [f"{{{{resolve:ssm:{parameter}}}}}"]})


def test_function_timeout_outlasts_the_request_deadline(template):
    timeout = Capture()
    template.has_resource_properties("AWS::Lambda::Function", {"Timeout": timeout})
    assert timeout.as_number() > timing.REQUEST_BUDGET_SECONDS + timing.RENDER_MARGIN_SECONDS
    assert timeout.as_number() <= timing.MAX_FUNCTION_TIMEOUT_SECONDS


def test_log_group_the_audit_trail_is_retained_with_the_tables(template):
    template.has_resource("AWS::Logs::LogGroup", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_log_group_has_explicit_retention(template, two_regions):
    # A year by default: Control Tower's CT.CLOUDWATCH.PR.2 requires at least 365 days.
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 365})
    two_regions.templates["eu-west-1"].has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 90})
    log_group = Capture()
    template.has_resource_properties("AWS::Lambda::Function", {"LoggingConfig": {"LogGroup": {"Ref": log_group}}})
    assert template.to_json()["Resources"][log_group.as_string()]["Type"] == "AWS::Logs::LogGroup"


def test_each_region_gets_its_own_slot_in_the_function_settings(two_regions):
    for region, slot in FULL_CONFIG["regions"].items():
        settings = Capture()
        two_regions.templates[region].has_resource_properties(
            "AWS::Lambda::Function",
            {
                "Environment": {
                    "Variables": {
                        "TICKETS_SETTINGS": settings,
                        "TICKETS_TABLE": {"Ref": "TicketsTable"},
                        "TICKETS_IDEMPOTENCY_TABLE": {"Ref": "TicketsIdempotencyTable"},
                    }
                }
            },
        )
        parsed = Settings.from_json(settings.as_string())
        assert (parsed.region_slot, parsed.region_slots, parsed.strict_keys) == (slot, 2, True)
        assert parsed.counters["orders"].shards == 2


def test_function_url_uses_iam_auth_by_default(template):
    template.has_resource_properties("AWS::Lambda::Url", {"AuthType": "AWS_IAM", "Cors": Match.absent()})
    # With IAM auth nobody is granted public invocation.
    template.resource_properties_count_is("AWS::Lambda::Permission", {"Principal": "*"}, 0)


def test_function_url_auth_none_only_when_configured_with_cors_and_concurrency_cap(two_regions):
    template = two_regions.templates["us-east-1"]
    template.has_resource_properties(
        "AWS::Lambda::Url",
        {
            "AuthType": "NONE",
            "Cors": {"AllowOrigins": ["https://app.example.com"], "AllowMethods": Match.array_with(["GET", "POST"])},
        },
    )
    template.has_resource_properties("AWS::Lambda::Function", {"ReservedConcurrentExecutions": 50})
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"Action": "lambda:InvokeFunctionUrl", "Principal": "*", "FunctionUrlAuthType": "NONE"},
    )


def test_outputs_name_the_url_and_the_table(template):
    template.has_output(
        "FunctionUrl", {"Value": {"Fn::GetAtt": [Match.string_like_regexp("FunctionUrl"), "FunctionUrl"]}}
    )
    template.has_output("TableName", {"Value": {"Ref": "TicketsTable"}})


def test_the_dashboards_generated_name_is_an_output(template):
    [dashboard] = template.find_resources("AWS::CloudWatch::Dashboard")
    template.has_output("DashboardName", {"Value": {"Ref": dashboard}})


def _statements(template: Template) -> list[dict]:
    policies = template.find_resources("AWS::IAM::Policy")
    return [
        statement for policy in policies.values() for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else actions


def test_dynamodb_grants_are_exact_actions_on_own_tables(template):
    grants = {}
    for statement in _statements(template):
        dynamodb = [action for action in _actions(statement) if action.startswith("dynamodb:")]
        if not dynamodb:
            continue
        assert all("*" not in action for action in dynamodb), statement
        assert statement["Resource"] != "*" and isinstance(statement["Resource"], dict), statement
        grants[statement["Resource"]["Fn::GetAtt"][0]] = sorted(dynamodb)
    assert grants == {
        "TicketsTable": ["dynamodb:BatchGetItem", "dynamodb:UpdateItem"],
        "TicketsIdempotencyTable": [
            "dynamodb:DeleteItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ],
    }


def test_only_xray_is_granted_on_any_resource(template):
    wildcard = [statement for statement in _statements(template) if statement["Resource"] == "*"]
    assert [sorted(_actions(statement)) for statement in wildcard] == [
        ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]
    ]


def test_no_managed_policies(template, two_regions):
    for each in (template, two_regions.templates["us-east-1"]):
        for role in each.find_resources("AWS::IAM::Role").values():
            assert "ManagedPolicyArns" not in role["Properties"], role


def _alarmed_throttles(template: Template) -> dict[str, set[str]]:
    """Table logical id -> the operations whose ThrottledRequests the stack's alarms watch."""
    throttled: dict[str, set[str]] = {}
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        for query in alarm["Properties"].get("Metrics", []):
            metric = query.get("MetricStat", {}).get("Metric")
            if metric and metric["MetricName"] == "ThrottledRequests":
                dimensions = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
                throttled.setdefault(dimensions["TableName"]["Ref"], set()).add(dimensions["Operation"])
    return throttled


def test_a_throttle_alarm_counts_any_one_throttled_operation(template):
    """DynamoDB publishes ThrottledRequests only for operations that were throttled; a plain `a + b`
    of two sparse series has no value where one is missing, so each term is filled with 0."""
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        queries = alarm["Properties"].get("Metrics", [])
        terms = [
            q["Id"]
            for q in queries
            if q.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "ThrottledRequests"
        ]
        if not terms:
            continue
        [expression] = [q["Expression"] for q in queries if "Expression" in q]
        assert expression == " + ".join(f"FILL({term}, 0)" for term in terms), expression


def test_alarms_for_errors_throttles_and_counters_near_max(template):
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    single = sorted(
        (alarm["Properties"]["Namespace"], alarm["Properties"]["MetricName"])
        for alarm in alarms.values()
        if "MetricName" in alarm["Properties"]
    )
    assert single == sorted(
        [
            ("AWS/Lambda", "Errors"),
            ("AWS/Lambda", "Throttles"),
            ("Tickets", "Errors"),
            ("Tickets", "CounterNearMax"),
            ("Tickets", "CounterDaysLeft"),
        ]
    )
    # Throttling: one alarm per table, summing every operation the handler calls on it.
    throttled = _alarmed_throttles(template)
    assert throttled == {
        "TicketsTable": {"UpdateItem", "BatchGetItem"},
        "TicketsIdempotencyTable": {"GetItem", "PutItem", "UpdateItem", "DeleteItem"},
    }
    # No topic configured: alarms exist but notify nobody.
    template.resource_count_is("AWS::SNS::Topic", 0)


def _running_out(template: Template) -> dict:
    [alarm] = [
        alarm["Properties"]
        for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("MetricName") == "CounterDaysLeft"
    ]
    return alarm


def test_a_counter_running_out_alarms_below_alarm_days_left_for_three_hours(template, two_regions):
    """One alarm on one metric for every key: the function's CounterDaysLeft, the soonest lane's days left at
    its recent rate, its Minimum per hour; below alarmDaysLeft (default 30) three hours running."""
    alarm = _running_out(template)
    assert {name: alarm[name] for name in alarm if name not in ("AlarmDescription", "AlarmActions")} == {
        "Namespace": "Tickets",
        "MetricName": "CounterDaysLeft",
        "Dimensions": [{"Name": "service", "Value": "tickets"}],  # no key: one metric whatever the number of keys
        "Statistic": "Minimum",
        "Period": 3600,
        "Threshold": 30,
        "ComparisonOperator": "LessThanThreshold",
        "EvaluationPeriods": 3,
        "TreatMissingData": "notBreaching",  # no rate measured yet (or no traffic): not running out
    }
    assert "within 30 days (alarmDaysLeft)" in alarm["AlarmDescription"]
    # A command an operator can paste: tickets_admin is no command on PATH.
    assert "`.venv/bin/python -m tickets_admin list --rate-over 60`" in alarm["AlarmDescription"]
    configured = _running_out(two_regions.templates["eu-west-1"])  # cdk.json's alarmDaysLeft: 14
    assert (configured["Threshold"], configured["ComparisonOperator"]) == (14, "LessThanThreshold")
    assert "within 14 days (alarmDaysLeft)" in configured["AlarmDescription"]


def test_dashboard_graphs_the_soonest_lane_s_days_left(template):
    [line] = _graphs(_dashboard_body(template))["Days before a counter reaches max"]
    namespace, name, dims, options = line
    assert (namespace, name, dims, options["stat"], options["period"]) == (
        "Tickets",
        "CounterDaysLeft",
        {"service": "tickets"},
        "Minimum",
        3600,
    )


def test_the_cost_of_the_alarms_in_docs_reference_cost_counts_every_alarm_and_metric(template):
    """CloudWatch bills an alarm per metric it watches: a metric-math alarm pays for each term."""
    alarms = template.find_resources("AWS::CloudWatch::Alarm").values()
    metrics = sum(
        1 if "MetricName" in alarm["Properties"] else sum("MetricStat" in q for q in alarm["Properties"]["Metrics"])
        for alarm in alarms
    )
    cost = " ".join((ROOT / "docs" / "reference" / "cost.md").read_text(encoding="utf-8").split())
    assert f"the alarms, {len(alarms)} alarms on {metrics} metrics" in cost
    assert f"so {metrics} × $0.10 = ${metrics * 0.10:.2f}" in cost


# The conditions that let only this account's alarms in us-east-1 use the alarm topic and its key.
OWN_ALARMS_IN_US_EAST_1 = {
    "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
    # The partition is a literal under the repository's feature flags (enablePartitionLiterals).
    "ArnLike": {
        "aws:SourceArn": {"Fn::Join": ["", ["arn:aws:cloudwatch:us-east-1:", {"Ref": "AWS::AccountId"}, ":alarm:*"]]}
    },
}


def test_the_topic_key_lets_only_this_accounts_cloudwatch_alarms_use_it(two_regions):
    keys = two_regions.templates["us-east-1"].find_resources("AWS::KMS::Key")
    assert len(keys) == 1
    statements = next(iter(keys.values()))["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = [s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert len(cloudwatch) == 1, statements
    [grant] = cloudwatch
    assert sorted(_actions(grant)) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert grant["Condition"] == OWN_ALARMS_IN_US_EAST_1


def test_the_alarm_topic_lets_only_this_accounts_cloudwatch_alarms_publish(two_regions):
    """A topic policy replaces SNS's default one: without this grant no alarm e-mail would ever be sent."""
    template = two_regions.templates["us-east-1"]
    topic = Capture()
    template.has_resource_properties("AWS::SNS::TopicPolicy", {"Topics": [topic]})
    assert topic.as_object() == {"Ref": next(iter(template.find_resources("AWS::SNS::Topic")))}
    statements = Capture()
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": "sns:Publish",
                                "Resource": topic.as_object(),
                                "Condition": OWN_ALARMS_IN_US_EAST_1,
                            }
                        )
                    ]
                ),
            }
        },
    )
    template.has_resource_properties("AWS::SNS::TopicPolicy", {"PolicyDocument": {"Statement": statements}})
    allowed = [statement for statement in statements.as_array() if statement["Effect"] == "Allow"]
    assert len(allowed) == 1, allowed  # CloudWatch's publish, nothing else
    assert any(statement["Effect"] == "Deny" for statement in statements.as_array())  # enforce_ssl's Deny stays


def _invoke_policies(template: Template) -> dict:
    return template.find_resources("AWS::IAM::ManagedPolicy")


def test_an_iam_stack_offers_callers_a_policy_with_exactly_the_two_invoke_actions(template):
    [(policy_id, policy)] = _invoke_policies(template).items()
    function = Capture()
    template.has_resource_properties("AWS::Lambda::Url", {"TargetFunctionArn": {"Fn::GetAtt": [function, "Arn"]}})
    function_arn = {"Fn::GetAtt": [function.as_string(), "Arn"]}
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(statements, key=lambda s: s["Action"]) == [
        {
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": function_arn,
            "Condition": {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}},
        },
        {
            "Effect": "Allow",
            "Action": "lambda:InvokeFunctionUrl",
            "Resource": function_arn,
            "Condition": {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
        },
    ]
    assert "Roles" not in policy["Properties"] and "Users" not in policy["Properties"]  # attached by the operator
    template.has_output("InvokePolicyArn", {"Value": {"Ref": policy_id}})


def test_each_caller_gets_both_invoke_permissions_only_through_the_url(every_region):
    template = every_region.templates["us-east-1"]
    function = Capture()
    template.has_resource_properties("AWS::Lambda::Url", {"TargetFunctionArn": {"Fn::GetAtt": [function, "Arn"]}})
    function_arn = {"Fn::GetAtt": [function.as_string(), "Arn"]}
    permissions = [resource["Properties"] for resource in template.find_resources("AWS::Lambda::Permission").values()]
    expected = []
    for principal in EVERY_REGION_CONFIG["callers"]:
        expected += [
            {
                "Action": "lambda:InvokeFunctionUrl",
                "FunctionName": function_arn,
                "Principal": principal,
                "FunctionUrlAuthType": "AWS_IAM",
            },
            {
                "Action": "lambda:InvokeFunction",
                "FunctionName": function_arn,
                "Principal": principal,
                "InvokedViaFunctionUrl": True,
            },
        ]
    assert sorted(permissions, key=json.dumps) == sorted(expected, key=json.dumps)
    template.has_output("FunctionArn", {"Value": function_arn})


def test_without_callers_the_function_admits_no_one_by_resource_policy(template):
    template.resource_count_is("AWS::Lambda::Permission", 0)


def test_a_public_stack_has_no_invoke_policy(two_regions):
    for each in two_regions.templates.values():
        assert _invoke_policies(each) == {}
        assert "InvokePolicyArn" not in each.to_json().get("Outputs", {})


def _warnings(synthesised: Synthesised) -> list[str]:
    found = []
    for stack in synthesised.stacks.values():
        for message in Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("tickets:")):
            found.append(message.entry.data)
    return found


def test_synthesis_warns_about_a_public_url_open_to_any_page_and_any_key(public):
    warnings = _warnings(public)
    assert any("corsOrigins" in w and "*" in w and "auth" in w for w in warnings), warnings
    assert any("strictKeys" in w and "reservedConcurrency" in w for w in warnings), warnings


def test_no_such_warnings_for_iam_auth_or_strict_keys(deployed_default, two_regions):
    assert _warnings(deployed_default) == [] and _warnings(two_regions) == []


def test_alarm_email_adds_an_encrypted_topic_wired_to_every_alarm(two_regions):
    template = two_regions.templates["us-east-1"]
    template.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ops@example.com"})
    topic = template.find_resources("AWS::SNS::Topic")
    assert len(topic) == 1 and "KmsMasterKeyId" in next(iter(topic.values()))["Properties"]
    topic_id = next(iter(topic))
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]


def _dashboard_body(template: Template) -> dict:
    """The stack's one dashboard, its body parsed; a reference reads `<Ref Id>`, an attribute `<GetAtt Id.Attr>`."""
    dashboards = template.find_resources("AWS::CloudWatch::Dashboard")
    assert len(dashboards) == 1
    (dashboard,) = dashboards.values()
    # No fixed name: two stacks, or two deployments in one account, never collide.
    assert "DashboardName" not in dashboard["Properties"]
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    return json.loads(
        "".join(
            part
            if isinstance(part, str)
            else f"<Ref {part['Ref']}>"
            if "Ref" in part
            else "<GetAtt {}.{}>".format(*part["Fn::GetAtt"])
            for part in parts
        )
    )


def _graphs(body: dict) -> dict[str, list[tuple[str, str, dict, dict]]]:
    """Each graph's title -> its lines as (namespace, metric, dimensions, options)."""
    graphs = {}
    for widget in body["widgets"]:
        if widget["type"] == "metric":
            lines = [
                (line[0], line[1], dict(zip(line[2:-1:2], line[3:-1:2])), line[-1])
                for line in widget["properties"]["metrics"]
            ]
            graphs[widget["properties"]["title"]] = lines
    return graphs


def _the_function(template: Template) -> str:
    functions = template.find_resources("AWS::Lambda::Function")
    assert len(functions) == 1
    return f"<Ref {next(iter(functions))}>"


def _every_error_code() -> set[str]:
    classes, codes = [TicketsError], set()
    while classes:
        cls = classes.pop()
        codes.add(cls.code)
        classes += cls.__subclasses__()
    return codes


def test_dashboard_graphs_tickets_issued_and_errors_by_every_code(template):
    graphs = _graphs(_dashboard_body(template))
    assert [
        (namespace, name, dims, options["stat"]) for namespace, name, dims, options in graphs["Tickets issued"]
    ] == [("Tickets", "TicketsIssued", {"service": "tickets"}, "Sum")]
    errors = graphs["Errors by code"]
    assert {(namespace, name, options["stat"]) for namespace, name, _, options in errors} == {
        ("Tickets", "Errors", "Sum")
    }
    codes = [dims.pop("code") for _, _, dims, _ in errors]
    assert all(dims == {"service": "tickets"} for _, _, dims, _ in errors)
    assert len(codes) == len(set(codes))
    assert set(codes) == _every_error_code() >= {"bad_request", "exhausted", "unavailable", "internal_error"}


def test_dashboard_graphs_duration_percentiles_and_concurrency_of_the_function(template, two_regions):
    function = _the_function(template)
    graphs = _graphs(_dashboard_body(template))
    assert sorted(
        (namespace, name, dims, options["stat"]) for namespace, name, dims, options in graphs["Function duration (ms)"]
    ) == [
        ("AWS/Lambda", "Duration", {"FunctionName": function}, "p50"),
        ("AWS/Lambda", "Duration", {"FunctionName": function}, "p99"),
    ]
    assert [
        (namespace, name, dims, options["stat"]) for namespace, name, dims, options in graphs["Concurrent executions"]
    ] == [("AWS/Lambda", "ConcurrentExecutions", {"FunctionName": function}, "Maximum")]
    # With reserved concurrency the graph marks the cap.
    capped = _dashboard_body(two_regions.templates["us-east-1"])
    (concurrency,) = [
        widget for widget in capped["widgets"] if widget["properties"].get("title") == "Concurrent executions"
    ]
    assert [line["value"] for line in concurrency["properties"]["annotations"]["horizontal"]] == [50]


def test_dashboard_graphs_throttles_of_every_operation_on_both_tables_and_the_function(template):
    graphs = _graphs(_dashboard_body(template))
    throttled = {}
    for title in ("Counter table throttled requests", "Idempotency table throttled requests"):
        for namespace, name, dims, options in graphs[title]:
            assert (namespace, name, options["stat"]) == ("AWS/DynamoDB", "ThrottledRequests", "Sum")
            throttled.setdefault(dims["TableName"], set()).add(dims["Operation"])
    # Exactly the operations the throttle alarms watch (the calls the handler makes), one line each.
    assert throttled == {f"<Ref {table}>": operations for table, operations in _alarmed_throttles(template).items()}
    assert {"UpdateItem", "BatchGetItem"} <= throttled["<Ref TicketsTable>"]
    assert {"GetItem", "PutItem", "UpdateItem", "DeleteItem"} <= throttled["<Ref TicketsIdempotencyTable>"]
    assert [
        (namespace, name, dims, options["stat"]) for namespace, name, dims, options in graphs["Function throttles"]
    ] == [("AWS/Lambda", "Throttles", {"FunctionName": _the_function(template)}, "Sum")]


@pytest.mark.parametrize("fixture", ["deployed_default", "two_regions"])
def test_dashboard_shows_the_state_of_every_alarm(request, fixture):
    for template in request.getfixturevalue(fixture).templates.values():
        widgets = [widget for widget in _dashboard_body(template)["widgets"] if widget["type"] == "alarm"]
        assert len(widgets) == 1
        alarms = template.find_resources("AWS::CloudWatch::Alarm")
        assert len(alarms) == 7
        assert sorted(widgets[0]["properties"]["alarms"]) == sorted(f"<GetAtt {alarm}.Arn>" for alarm in alarms)


@pytest.mark.parametrize("fixture", ["deployed_default", "two_regions"])
def test_cdk_nag_aws_solutions_has_no_unsuppressed_findings(request, fixture):
    synthesised = request.getfixturevalue(fixture)
    assert validation_findings(synthesised.outdir) == []


def test_the_cdk_nag_gate_stops_a_synthesis_with_a_finding(tmp_path):
    """add_stacks registers the AwsSolutions pack as a validation plugin: an unsuppressed finding (a topic
    without encryption that does not require TLS, AwsSolutions-SNS3) beside the service stops synthesis,
    and the report names it."""
    app = App(context=CDK_CONTEXT, outdir=str(tmp_path / "cdk.out"))
    config = parse_config(app.node.try_get_context("tickets"))
    init_ledger(tmp_path / "tickets.lock.json", config)
    app.node.set_context("tickets:ledgerPath", str(tmp_path / "tickets.lock.json"))
    (stack,) = add_stacks(app, config).values()
    sns.Topic(stack, "Stray")
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    assert "AwsSolutions-SNS3 at Tickets-us-east-1/Stray/Resource" in validation_findings(tmp_path / "cdk.out")


@pytest.mark.slow
def test_the_cdks_own_validation_writes_what_it_finds_into_the_report(tmp_path):
    """The tests that synthesise as a user does (the example app, `make synth`) turn the CDK's built-in
    CloudFormation validation on and read its findings with validation_findings: they can fail. A property the
    resource type lacks is reported, as a warning that does not stop the synthesis."""
    script = (
        "import sys, aws_cdk as cdk\n"
        "app = cdk.App(outdir=sys.argv[1])\n"
        "stack = cdk.Stack(app, 'Shop', env=cdk.Environment(region='us-east-1'))\n"
        "cdk.CfnResource(stack, 'Stray', type='AWS::SNS::Topic', properties={'NoSuchProperty': 1})\n"
        "app.synth()\n"
    )
    env = {**os.environ, **with_cdk_validation(True)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "cdk.out")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert validation_findings(tmp_path / "cdk.out") == ["F3002 at Shop/Stray"]


def test_every_nag_suppression_gives_a_specific_reason(two_regions):
    reasons = []
    for stack in two_regions.stacks.values():
        for resource in two_regions.assembly.get_stack_by_name(stack.stack_name).template["Resources"].values():
            for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
                reasons.append(rule["reason"])
    assert reasons, "expected the X-Ray wildcard suppression"
    assert all(len(reason) >= 40 for reason in reasons), reasons


@pytest.mark.parametrize("fixture", ["every_region", "two_regions"])
def test_cfn_lint_finds_no_errors_in_any_region_the_config_accepts(request, fixture):
    """Each stack's template against CloudFormation's schemas of its own region: a resource type the region
    lacks (E3006, e.g. AWS::Lambda::Url where there are no Function URLs) is an error."""
    synthesised = request.getfixturevalue(fixture)
    errors = {region: cfn_lint_errors(synthesised.template_json(region), region) for region in synthesised.stacks}
    assert errors == {region: [] for region in synthesised.stacks}


def test_cfn_lint_errors_finds_a_property_the_resource_type_lacks_and_a_type_the_region_lacks(two_regions):
    """The check above can fail: cfn-lint's errors come back for a template that has one."""
    template = copy.deepcopy(two_regions.template_json("us-east-1"))
    template["Resources"]["Stray"] = {"Type": "AWS::SNS::Topic", "Properties": {"NoSuchProperty": 1}}
    assert [error for error in cfn_lint_errors(template, "us-east-1") if "NoSuchProperty" in error]
    template["Resources"]["Stray"] = {"Type": "AWS::Lambda::NoSuchType", "Properties": {}}
    assert [error for error in cfn_lint_errors(template, "us-east-1") if "E3006" in error]


def test_cdk_json_sets_every_feature_flag_that_differs_from_its_default(deployed_default):
    """Else every `cdk synth` warns "N feature flags are not configured": cdk.json carries what `cdk init` writes."""
    manifest = json.loads((deployed_default.outdir / "manifest.json").read_text())
    (report,) = [
        artifact["properties"]["flags"]
        for artifact in manifest["artifacts"].values()
        if artifact["type"] == "cdk:feature-flag-report"
    ]
    assert len(report) > 50
    unconfigured = [
        name
        for name, flag in report.items()
        if "userValue" not in flag
        and flag["recommendedValue"] != flag.get("unconfiguredBehavesLike", {}).get("v2", False)
    ]
    assert unconfigured == []
    assert {name: flag["userValue"] for name, flag in report.items() if "userValue" in flag} == {
        name: flag["recommendedValue"] for name, flag in report.items() if "userValue" in flag
    }


def test_lambda_asset_holds_only_the_tickets_package(deployed_default):
    assets = [path for path in deployed_default.outdir.glob("asset.*") if path.is_dir()]
    assert len(assets) == 1
    files = {str(path.relative_to(assets[0])) for path in assets[0].rglob("*") if path.is_file()}
    assert "tickets/handler.py" in files
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in files)
    assert all(name.startswith("tickets/") for name in files)
    # The deploy side stays out of the function: no cdk.json parsing, no region list.
    shipped = "\n".join((assets[0] / name).read_text() for name in files if name.endswith(".py"))
    assert "def parse_config" not in shipped and "from tickets_deploy" not in shipped
    assert not any(region in shipped for region in SERVED_REGIONS)
    # The package as written: each file's bytes.
    assert (assets[0] / "tickets" / "handler.py").read_bytes() == (PACKAGE / "handler.py").read_bytes()


def test_the_same_package_gives_the_same_asset_hash_wherever_it_is_built(deployed_default, tmp_path):
    # CDK names the asset by the hash of its staged files (FileSystem.fingerprint: their paths and bytes). The
    # asset built in other processes (other hash seeds), from a copy of the package elsewhere (another path,
    # other file times), hashes the same as the one this synthesis staged.
    (staged,) = [path for path in deployed_default.outdir.glob("asset.*") if path.is_dir()]
    copy = shutil.copytree(
        PACKAGE, tmp_path / "site-packages" / "tickets", ignore=shutil.ignore_patterns("__pycache__")
    )
    hashes = set()
    for seed, package in (("1", PACKAGE), ("2", copy)):
        built = tmp_path / f"built-{seed}"
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, pathlib; from tickets_cdk.asset import write_asset; "
                "write_asset(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))",
                str(built),
                str(package),
            ],
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
            timeout=120,
        )
        hashes.add(FileSystem.fingerprint(str(built)))
    assert hashes == {staged.name.removeprefix("asset.")}


INVALID_CONFIGS = [
    ({"regions": {"us-east-1": 1}, "regionSlots": 1}, "tickets.regions.us-east-1"),
    ({"regions": {"us-east-9": 0}}, "tickets.regions.us-east-9"),
    ({"regions": {"cn-north-1": 0}}, "tickets.regions.cn-north-1"),
    ({"regions": {"ap-south-2": 0}}, "tickets.regions.ap-south-2"),  # no Function URLs there
    ({"regions": {"us-east-1": 0, "eu-west-1": 0}, "regionSlots": 2}, "tickets.regions.eu-west-1"),
    ({"regions": {"us-east-1": 0}, "counters": {"orders": {"stride": 0}}}, "tickets.counters.orders.stride"),
    ({"regions": {"us-east-1": 0}, "colour": "blue"}, "tickets.colour"),
]


@pytest.mark.parametrize("tickets, field", INVALID_CONFIGS)
def test_invalid_config_stops_synthesis_naming_the_field(tickets, field, tmp_path):
    """app.py's main in this process (its jsii kernel is loaded once for the tier; a `python app.py` costs
    about 8 s of CPU): it exits with the field named, no other exception, no template, no ledger written."""
    ledger = tmp_path / "tickets.lock.json"
    with pytest.raises(SystemExit) as stopped:
        main(App(context={"tickets": tickets}, outdir=str(tmp_path / "cdk.out")), ledger)
    assert str(stopped.value.code).startswith("cdk.json: invalid tickets config: ")
    assert field in str(stopped.value.code)
    assert not list((tmp_path / "cdk.out").glob("*.template.json")) and not ledger.exists()


def test_python_app_py_with_an_invalid_config_exits_naming_the_field_without_a_traceback(tmp_path):
    """The same refusal as the CDK CLI runs the app (`python app.py`, the context in CDK_CONTEXT_JSON)."""
    tickets, field = INVALID_CONFIGS[-1]
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps({"tickets": tickets}), "CDK_OUTDIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "app.py")], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 1
    assert "cdk.json: invalid tickets config: " in result.stderr and field in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("*.template.json"))


def _function_settings(template: Template) -> str:
    settings = Capture()
    template.has_resource_properties(
        "AWS::Lambda::Function", {"Environment": {"Variables": {"TICKETS_SETTINGS": settings}}}
    )
    return settings.as_string()


def test_two_synthesised_regions_issue_disjoint_tickets_that_together_are_dense(two_regions, deploy):
    """Each region's handler runs with the settings its own stack gives it, on its own table."""
    regions = {}
    for region in FULL_CONFIG["regions"]:
        regions[region] = deploy(FULL_CONFIG, region)
        regions[region].settings = Settings.from_json(_function_settings(two_regions.templates[region]))

    issued: dict[str, dict[str, list[int]]] = {"default": {}, "orders": {}}
    for key in issued:
        for region, handler in regions.items():
            tickets = []
            for count in (1, 3, 1, 5, 2):  # 12 tickets per region, single requests and blocks mixed
                answer = handler.get(f"/{key}", query={"count": str(count)})
                assert answer.status == 200, answer.body
                tickets += answer.body.get("tickets", [answer.body["ticket"]])
            issued[key][region] = tickets

    for key, by_region in issued.items():
        east, west = by_region["us-east-1"], by_region["eu-west-1"]
        assert not set(east) & set(west), key
        assert len(set(east)) == len(east) == 12 and len(set(west)) == len(west) == 12
    # One lane per region (no shards): slot 0 owns the odd, slot 1 the even tickets, so equal work is dense.
    assert sorted(issued["default"]["us-east-1"] + issued["default"]["eu-west-1"]) == list(range(1, 25))
    assert all(ticket % 2 == 1 for ticket in issued["default"]["us-east-1"])
    # Sharded: 2 regions x 2 shards = 4 lanes from 5000; each region keeps to its own two lanes.
    assert {(ticket - 5000) % 4 for ticket in issued["orders"]["us-east-1"]} <= {0, 1}
    assert {(ticket - 5000) % 4 for ticket in issued["orders"]["eu-west-1"]} <= {2, 3}


def test_big_decimal_strings_reach_the_template_and_the_handler_exactly(two_regions, deploy):
    """cdk.json's decimal strings -> app.py (through Node) -> the template's TICKETS_SETTINGS -> the handler
    on moto, issuing the last tickets an int64 holds, exactly, then refusing to pass max."""
    issued = {}
    for region in FULL_CONFIG["regions"]:
        settings = _function_settings(two_regions.templates[region])
        assert Settings.from_json(settings).counters["big"].start == BIG_START
        assert f'"start":{BIG_START}' in settings  # the digits themselves, not a rounded double
        handler = deploy(FULL_CONFIG, region)
        handler.settings = Settings.from_json(settings)
        answer = handler.get("/big", query={"count": "3"})
        assert answer.status == 200, answer.body
        issued[region] = answer.body["tickets"]
        exhausted = handler.get("/big")
        assert (exhausted.status, exhausted.body["error"]) == (409, "exhausted")
    assert issued == {
        "us-east-1": [BIG_START, BIG_START + 2, BIG_START + 4],
        "eu-west-1": [BIG_START + 1, BIG_START + 3, BIG_START + 5],
    }
    assert issued["eu-west-1"][-1] == MAX_TICKET


def test_the_compatibility_route_reaches_the_deployed_function(two_regions, deploy):
    """cdk.json's compat -> app.py -> the template's TICKETS_SETTINGS -> the handler answers the bare number."""
    settings = _function_settings(two_regions.templates["us-east-1"])
    assert Settings.from_json(settings).compat_path == "counter"
    handler = deploy(FULL_CONFIG, "us-east-1")
    handler.settings = Settings.from_json(settings)
    answer = handler.get("/counter", query={"systemKey": "big"})  # one lane per region: a certain first ticket
    assert (answer.status, answer.headers["Content-Type"]) == (200, "text/plain; charset=utf-8")
    assert answer.body == str(BIG_START)
