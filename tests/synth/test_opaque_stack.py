"""An opaque counter in a synthesised stack (docs/how-to/opaque-order-numbers.md): the template names the keys'
parameter and lets the function alone read it, and holds no key, nor anywhere a key could be kept; the function built
from the template's environment, its keys put by `tickets_admin put-key` in moto's SSM and read as the handler reads
them at cold start, serves the counter. 100,000 of its ids (TICKETS_OPAQUE_SERVED) are distinct, well-formed and carry
no order, and decode to their tickets: all of them with the keys tickets_admin reads, a sample through the CLI itself.
One stack is synthesised for the module (Template.from_stack costs ~10 s)."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, RemovalPolicy, Stack
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template

from moto_deployment import COUNTER_TABLE, IDEMPOTENCY_TABLE, SERIES_TABLE, function_client
from opaque_statistics import luhn_valid, no_order_bound, position_p_values, spearman
from tickets.app import create_app
from tickets.opaque import ALPHABETS, OpaqueConfig, OpaqueKeyError, parse_keys
from tickets.opaque.secret import parameter_keys
from tickets.settings import OPAQUE_KEYS_ENV, SETTINGS_ENV, Settings
from tickets_admin.__main__ import main as tickets_admin
from tickets_cdk import TicketAlarms, TicketService
from tickets_cdk.ledger_check import LEDGER_PATH_CONTEXT
from tickets_deploy.ledger import init_ledger
from tickets_deploy.opaque_decode import OpaqueCodec

SERVED = int(os.environ.get("TICKETS_OPAQUE_SERVED", "100000"))  # ids served through the handler, 1,000 a request
TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
COUNTERS = {"orders": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS}, "plain": {}}


class Synthesised:
    def __init__(self, directory: Path) -> None:
        self.ledger = directory / "tickets.lock.json"
        app = App(context={LEDGER_PATH_CONTEXT: str(self.ledger)})
        stack = Stack(app, "Shop", env=Environment(region="us-east-1", account="111122223333"))
        self.service = TicketService(
            stack, "Orders", table_name="shop-orders", strict_keys=True, counters=COUNTERS,
            removal_policy=RemovalPolicy.DESTROY,
        )  # fmt: skip
        key = kms.Key(stack, "TicketsKey", enable_key_rotation=True)
        self.encrypted = TicketService(
            stack, "Codes", table_name="shop-codes", counters=COUNTERS, encryption_key=key,
            removal_policy=RemovalPolicy.DESTROY,
        )  # fmt: skip
        self.plain = TicketService(stack, "Plain", table_name="shop-plain", counters={"plain": {}})
        for service in (self.service, self.plain):
            TicketAlarms(stack, f"{service.node.id}Alarms", service=service)
        init_ledger(self.ledger, self.service.config)  # synthesis records the other two services beside it
        self.stack = stack
        self.template = Template.from_stack(stack)
        self.resources: dict[str, Any] = self.template.to_json()["Resources"]

    def function(self, service: TicketService) -> dict[str, Any]:
        return self.resources[self.stack.get_logical_id(service.function.node.default_child)]

    def environment(self, service: TicketService) -> dict[str, Any]:
        variables: dict[str, Any] = self.function(service)["Properties"]["Environment"]["Variables"]
        return variables

    def role_statements(self, service: TicketService) -> list[dict[str, Any]]:
        role = self.stack.get_logical_id(service.role.node.default_child)
        return [
            statement
            for resource in self.resources.values()
            if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        ]


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory) -> Synthesised:
    return Synthesised(tmp_path_factory.mktemp("opaque-stack"))


def parameter_arn(name: str) -> dict[str, Any]:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":ssm:us-east-1:111122223333:parameter{name}"]]}


def test_the_function_is_told_the_parameters_name_and_may_read_that_parameter_alone(synthesised):
    for service, name in ((synthesised.service, "shop-orders"), (synthesised.encrypted, "shop-codes")):
        assert synthesised.environment(service)[OPAQUE_KEYS_ENV] == f"/tickets/{name}/opaque-keys"
        assert service.opaque_keys_parameter == f"/tickets/{name}/opaque-keys"
        reads = [each for each in synthesised.role_statements(service) if "ssm:GetParameter" in str(each["Action"])]
        assert reads == [
            {"Action": "ssm:GetParameter", "Effect": "Allow", "Resource": parameter_arn(f"/tickets/{name}/opaque-keys")}
        ]
    assert OPAQUE_KEYS_ENV not in synthesised.environment(synthesised.plain)
    assert synthesised.plain.opaque_keys_parameter is None
    assert not [each for each in synthesised.role_statements(synthesised.plain) if "ssm:" in str(each["Action"])]
    # With the service's encryption_key, the function may decrypt what that key encrypted (the parameter too).
    decrypting = [
        each for each in synthesised.role_statements(synthesised.encrypted) if "kms:Decrypt" in each["Action"]
    ]
    assert len(decrypting) == 1


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for key, each in value.items() for text in (key, *_strings(each))]
    if isinstance(value, list):
        return [text for each in value for text in _strings(each)]
    return [value] if isinstance(value, str) else []


def _reads_as_keys(text: str) -> bool:
    try:
        parse_keys(text)
    except OpaqueKeyError:
        return False
    return True


def test_a_service_with_an_opaque_counter_alarms_on_a_replaced_key(synthesised):
    """Its 503s for a key version whose key is not the one its first ids were made with (Errors of code key_replaced);
    a service without an opaque counter has no such alarm."""
    watched = [
        {each["Name"]: each["Value"] for each in resource["Properties"]["Dimensions"]}
        for resource in synthesised.resources.values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and resource["Properties"]["AlarmDescription"].startswith("The function holds another key")
    ]
    assert watched == [{"code": "key_replaced", "service": "shop-orders"}]


def test_no_key_nor_a_place_for_one_is_in_the_template(synthesised):
    """The keys are made after synthesis, outside CloudFormation: no string of the template reads as keys, no
    resource could hold them (a parameter, a secret), and the function's environment is names and settings."""
    template = synthesised.template.to_json()
    assert not [text for text in _strings(template) if _reads_as_keys(text)]
    kinds = {resource["Type"] for resource in synthesised.resources.values()}
    assert not kinds & {"AWS::SSM::Parameter", "AWS::SecretsManager::Secret", "Custom::AWS"}
    for service in (synthesised.service, synthesised.encrypted):
        environment = synthesised.environment(service)
        settings = Settings.from_json(environment[SETTINGS_ENV])
        assert settings.counters["orders"].opaque == OpaqueConfig(10, "digits", "luhn")
        assert not [text for text in _strings(environment) if _reads_as_keys(text)]


def _admin(*args: str, ledger: Path) -> tuple[int, str]:
    """python -m tickets_admin for an app built on the construct: the service's settings from its ledger."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = tickets_admin(["--service", "shop-orders", "--ledger", str(ledger), *args])
    assert status == 0, err.getvalue()
    return status, out.getvalue()


@pytest.fixture
def served(synthesised, deploy) -> Any:
    """The handler as the stack runs it: its settings from the template's environment, its keys, put by
    tickets_admin put-key, read from (moto's) SSM at cold start as tickets.handler reads them (parameter_keys of the
    name in the environment)."""
    _admin("put-key", ledger=synthesised.ledger)
    environment = synthesised.environment(synthesised.service)
    region = deploy({"regions": {"us-east-1": 0}})  # moto's tables, for the function built below
    region._app = create_app(
        Settings.from_json(environment[SETTINGS_ENV]),
        function_client("us-east-1"),
        COUNTER_TABLE,
        IDEMPOTENCY_TABLE,
        series_table=SERIES_TABLE,
        opaque_keys=parameter_keys(environment[OPAQUE_KEYS_ENV]),
    )
    return region


def test_the_synthesised_stacks_handler_serves_ids_that_decode_to_their_tickets(synthesised, served):
    made: list[str] = []
    while len(made) < SERVED:
        answer = served.post("/orders", query={"count": min(1000, SERVED - len(made))})
        assert answer.status == 200, answer
        made += answer.body.get("ids", [answer.body["id"]])
    assert len(set(made)) == SERVED  # distinct
    digits = ALPHABETS["digits"]
    assert all(len(each) == 10 and each.isdigit() and luhn_valid(each, digits) for each in made)  # well-formed
    rho = spearman(made)
    p_values = position_p_values(made, digits)
    print(f"{SERVED} ids served: Spearman's rho with their order {rho:+.5f} (bound {no_order_bound(SERVED):.5f});")
    print("  chi-square p-value per position: " + ", ".join(f"{p:.3f}" for _, p in p_values))
    assert abs(rho) < no_order_bound(SERVED)  # no order
    assert all(p > 1e-7 for _, p in p_values)  # no favourite character at any position

    from tickets_admin.commands.opaque import deployed_keys  # the keys as tickets_admin decode reads them
    from tickets_admin.registry import Context
    from tickets_deploy.ledger import service_config

    config = service_config(synthesised.ledger, "shop-orders")
    keys = deployed_keys(Context(config, synthesised.ledger, "us-east-1", None, "shop-orders", from_ledger=True))
    ids = OpaqueCodec(config.counters["orders"].opaque, keys, "orders")
    assert [ids.decode(each) for each in made] == [(ticket, 1) for ticket in range(5000, 5000 + SERVED)]
    sample = made[:: max(1, SERVED // 25)]
    _, out = _admin("decode", "orders", *sample, "--no-table-check", ledger=synthesised.ledger)  # its table: the tests'
    assert out.splitlines() == [
        f"{each} -> ticket {5000 + at * max(1, SERVED // 25)} (key version 1)" for at, each in enumerate(sample)
    ]
    assert json.dumps(served.get("/_counters/orders").body["opaque"]) == json.dumps(
        {"keyVersion": 1, "idsPerVersion": 100_000_000, "keyVersionsHeld": [1]}
    )
