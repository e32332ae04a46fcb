"""`make deploy`'s check before CloudFormation starts (tickets_deploy/predeploy.py): each region's
deployed ledger version must be an ancestor of the one being deployed, in the assembly's regions and in
every region the ledger ever gave a slot (found by the service's table), and every SSM parameter the
templates resolve (the Powertools layer) must exist. AWS is botocore's Stubber on real clients: moto
refuses `/aws/` parameter names (docs/how-to/deploy.md#before-cloudformation-starts)."""

from __future__ import annotations

import os
from pathlib import Path

import botocore.session
import pytest
from botocore.stub import Stubber

from cloud_assembly import LAYER
from cloud_assembly import write_assembly as assembly
from tickets.botocore_session import NO_CREDENTIALS
from tickets_deploy import predeploy
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LedgerFile, record_services, write_ledger_file

MAIN = {"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2, "strictKeys": True}


def on(tickets: dict, previous: LedgerFile | None = None) -> LedgerFile:
    return record_services(previous, {"tickets-counters": parse_config(tickets)}, None, None)


@pytest.fixture
def history() -> tuple[LedgerFile, LedgerFile, LedgerFile]:
    """main's first version, main after a change, and a branch's change on the first version."""
    first = on(MAIN)
    second = on({**MAIN, "counters": {"orders": {"start": 5000}}}, first)
    branch = on({**MAIN, "strictKeys": False}, first)
    return first, second, branch


class StubbedAws:
    """Real botocore clients per (service, region), each behind a Stubber: every call must be expected."""

    def __init__(self, monkeypatch):
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        self.session = botocore.session.get_session()
        self.stubs: dict[tuple[str, str], Stubber] = {}

    def __call__(self, service: str, region: str):
        return self.stub(service, region).client

    def stub(self, service: str, region: str) -> Stubber:
        if (service, region) not in self.stubs:
            stubber = Stubber(self.session.create_client(service, region_name=region))
            stubber.activate()
            self.stubs[service, region] = stubber
        return self.stubs[service, region]

    def deployed(
        self, region: str, version: str | None, status: str = "UPDATE_COMPLETE", name: str | None = None
    ) -> None:
        """The stack `name` (default Tickets-REGION) runs `version`: DescribeStacks answers it."""
        outputs = [] if version is None else [{"OutputKey": "TicketsLedgerVersion", "OutputValue": version}]
        name = name or f"Tickets-{region}"
        self.stub("cloudformation", region).add_response(
            "describe_stacks",
            {
                "Stacks": [
                    {
                        "StackName": name,
                        "CreationTime": "2026-11-01T00:00:00Z",
                        "StackStatus": status,
                        "Outputs": outputs,
                    }
                ]
            },
            {"StackName": name},
        )

    def not_deployed(self, region: str) -> None:
        name = f"Tickets-{region}"
        self.stub("cloudformation", region).add_client_error(
            "describe_stacks",
            service_error_code="ValidationError",
            service_message=f"Stack with id {name} does not exist",
            http_status_code=400,
            expected_params={"StackName": name},
        )

    def holds_table(self, region: str, stack: str | None, table: str = "tickets-counters") -> None:
        """DescribeStackResources by the table's name: the stack `stack` holds it (None: no stack does)."""
        stub = self.stub("cloudformation", region)
        if stack is None:
            stub.add_client_error(
                "describe_stack_resources",
                service_error_code="ValidationError",
                service_message=f"Stack for {table} does not exist",
                http_status_code=400,
                expected_params={"PhysicalResourceId": table},
            )
            return
        resource = {
            "StackName": stack,
            "StackId": f"arn:aws:cloudformation:{region}:111111111111:stack/{stack}/1",
            "LogicalResourceId": "TicketsTable",
            "PhysicalResourceId": table,
            "ResourceType": "AWS::DynamoDB::Table",
            "Timestamp": "2026-11-01T00:00:00Z",
            "ResourceStatus": "UPDATE_COMPLETE",
        }
        stub.add_response("describe_stack_resources", {"StackResources": [resource]}, {"PhysicalResourceId": table})

    def parameter(self, region: str, exists: bool = True) -> None:
        stub = self.stub("ssm", region)
        if exists:
            value = f"arn:aws:lambda:{region}:017000801446:layer:AWSLambdaPowertoolsPythonV3-python314-arm64:27"
            stub.add_response(
                "get_parameter",
                {"Parameter": {"Name": LAYER, "Type": "String", "Value": value}},
                {"Name": LAYER},
            )
        else:
            stub.add_client_error(
                "get_parameter",
                service_error_code="ParameterNotFound",
                http_status_code=400,
                expected_params={"Name": LAYER},
            )

    def all_called(self) -> None:
        for stubber in self.stubs.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def aws(monkeypatch) -> StubbedAws:
    return StubbedAws(monkeypatch)


def run(
    tmp_path: Path, ledger: LedgerFile, deploying: str | None, aws: StubbedAws, capsys, **stacks
) -> tuple[int, str]:
    """predeploy's command on an assembly of `deploying` (assembly()'s regions and prefix in `stacks`)."""
    write_ledger_file(tmp_path / "tickets.lock.json", ledger)
    out = tmp_path / "cdk.out"
    out.mkdir(exist_ok=True)
    assembly(out, deploying, **stacks)
    status = predeploy.main(["--assembly", str(out), "--ledger", str(tmp_path / "tickets.lock.json")], client=aws)
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_a_first_deploy_and_a_deploy_of_a_descendant_go_ahead(tmp_path, aws, capsys, history):
    first, second, _ = history
    aws.not_deployed("us-east-1")  # a new region
    aws.holds_table("us-east-1", None)
    aws.deployed("eu-west-1", first.version)
    aws.holds_table("eu-west-1", "Tickets-eu-west-1")
    aws.parameter("us-east-1")
    aws.parameter("eu-west-1")
    status, said = run(tmp_path, second, second.version, aws, capsys)
    assert status == 0, said
    assert (
        f"us-east-1: stack Tickets-us-east-1: not deployed yet; a first deploy of ledger version {second.version}"
        in said
    )
    assert f"eu-west-1: stack Tickets-eu-west-1: deploying ledger version {second.version}, a descendant" in said
    assert f"eu-west-1: SSM parameter {LAYER} exists" in said and "cdk deploy may go ahead" in said
    aws.all_called()


def test_a_region_on_another_branchs_version_stops_the_deploy_naming_region_and_both_versions(
    tmp_path, aws, capsys, history
):
    """Hole 1 at deploy: a region deployed from branch A must not get main's merge of B."""
    first, second, branch = history
    aws.deployed("us-east-1", branch.version)
    aws.holds_table("us-east-1", "Tickets-us-east-1")
    aws.deployed("eu-west-1", first.version)
    aws.holds_table("eu-west-1", "Tickets-eu-west-1")
    aws.parameter("us-east-1")
    aws.parameter("eu-west-1")
    status, said = run(tmp_path, second, second.version, aws, capsys)
    assert status == 1
    assert "predeploy: nothing was deployed:" in said
    assert (
        f"us-east-1: stack Tickets-us-east-1 runs ledger version {branch.version}, which is not an ancestor of "
        f"{second.version}, the version being deployed: {branch.version} is not in this checkout's history" in said
    )
    assert "Deploy from main only" in said
    assert "eu-west-1: stack Tickets-eu-west-1 runs" not in said  # the other region is fine, and still checked
    aws.all_called()


MOVED = {"regions": {"eu-west-1": 1}, "regionSlots": 2, "strictKeys": True}  # us-east-1 removed: slot 0 retired


def deploy_moved(tmp_path, aws, capsys, first, us_east_1: str, eu_west_1: str | None) -> tuple[str, int, str]:
    """Deploy MOVED (eu-west-1 alone; us-east-1 retired) while us-east-1's stack runs `us_east_1` and eu-west-1's
    `eu_west_1` (None: not deployed yet): the version deployed, the status and what predeploy said."""
    moved = on(MOVED, first)
    if eu_west_1 is None:
        aws.not_deployed("eu-west-1")
    else:
        aws.deployed("eu-west-1", eu_west_1)
    aws.holds_table("eu-west-1", None if eu_west_1 is None else "Tickets-eu-west-1")
    aws.holds_table("us-east-1", "Tickets-us-east-1")
    aws.deployed("us-east-1", us_east_1)
    aws.parameter("eu-west-1")
    status, said = run(tmp_path, moved, moved.version, aws, capsys, regions=("eu-west-1",))
    aws.all_called()
    return moved.version or "", status, said


def test_a_retired_region_on_another_lines_version_stops_a_deploy_that_leaves_it_out(tmp_path, aws, capsys, history):
    """Finding 1 (tests/models/test_team_fence_model.py), at deploy: a branch moved the service to eu-west-1
    (us-east-1 retired) while us-east-1 runs another branch's version. The assembly holds eu-west-1 alone, a first
    deploy; the check once looked no further, and both regions then issued the same tickets. us-east-1's stack is
    found by the table."""
    first, _, branch = history
    moved, status, said = deploy_moved(tmp_path, aws, capsys, first, branch.version, None)
    assert status == 1, said
    assert (
        f"us-east-1 (slot 0, retired, of tickets-counters): stack Tickets-us-east-1 (not in this deploy) runs ledger "
        f"version {branch.version}, which is not an ancestor of {moved}, the version being deployed: "
        f"{branch.version} is not in this checkout's history" in said
    )
    assert "eu-west-1: stack Tickets-eu-west-1: not deployed yet" in said


def test_a_retired_region_on_an_ancestor_and_a_deleted_stack_let_the_deploy_go_ahead(tmp_path, aws, capsys, history):
    first, _, _ = history
    moved, status, said = deploy_moved(tmp_path, aws, capsys, first, first.version, first.version)
    assert status == 0, said
    assert (
        f"us-east-1 (slot 0, retired, of tickets-counters): stack Tickets-us-east-1 (not in this deploy): runs ledger "
        f"version {first.version}, an ancestor of {moved}" in said
    )

    aws.deployed("eu-west-1", first.version)
    aws.holds_table("eu-west-1", "Tickets-eu-west-1")
    aws.holds_table("us-east-1", "Tickets-us-east-1")  # the table, retained, of a stack since deleted
    aws.stub("cloudformation", "us-east-1").add_client_error(
        "describe_stacks",
        service_error_code="ValidationError",
        service_message="Stack with id Tickets-us-east-1 does not exist",
        http_status_code=400,
        expected_params={"StackName": "Tickets-us-east-1"},
    )
    aws.parameter("eu-west-1")
    status, said = run(tmp_path, on(MOVED, first), moved, aws, capsys, regions=("eu-west-1",))
    assert status == 0, said
    assert (
        "stack Tickets-us-east-1 (not in this deploy): the stack does not exist (deleted): nothing runs there" in said
    )
    aws.all_called()


def test_the_stacks_of_an_apps_own_names_and_of_several_services_are_found_by_their_tables(tmp_path, aws, capsys):
    """An app built on the construct: its own stack names, two services in one stack per region, eu-west-1 dropped
    from the app (its stack, Shop-eu-west-1, left running): found once, through either table, and checked."""
    both = {"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2, "strictKeys": True}
    east = {**both, "regions": {"us-east-1": 0}}
    services = ("shop-invoices", "shop-orders")
    first = record_services(None, {name: parse_config({**both, "tableName": name}) for name in services})
    later = record_services(first, {name: parse_config({**east, "tableName": name}) for name in services})
    aws.deployed("us-east-1", first.version, name="Shop-us-east-1")
    for table in services:
        aws.holds_table("us-east-1", "Shop-us-east-1", table)
    aws.holds_table("eu-west-1", "Shop-eu-west-1", "shop-invoices")
    aws.deployed("eu-west-1", first.version, name="Shop-eu-west-1")
    aws.holds_table("eu-west-1", "Shop-eu-west-1", "shop-orders")
    aws.parameter("us-east-1")
    status, said = run(tmp_path, later, later.version, aws, capsys, regions=("us-east-1",), prefix="Shop")
    assert status == 0, said
    assert "eu-west-1 (slot 1, retired, of shop-invoices): stack Shop-eu-west-1 (not in this deploy): runs" in said
    assert "of shop-orders): stack" not in said  # the same stack, read once
    aws.all_called()


def test_an_older_checkout_cannot_take_a_region_back(tmp_path, aws, capsys, history):
    first, second, _ = history
    aws.deployed("us-east-1", second.version)
    aws.holds_table("us-east-1", "Tickets-us-east-1")
    aws.holds_table("eu-west-1", None)
    aws.parameter("us-east-1")
    status, said = run(tmp_path, second, first.version, aws, capsys)
    assert status == 1
    assert f"{second.version} is newer than {first.version} in this checkout's history: pull main" in said


def test_a_missing_powertools_parameter_stops_the_deploy_naming_the_region_and_the_way_out(
    tmp_path, aws, capsys, history
):
    first, _, _ = history
    aws.deployed("us-east-1", first.version)
    aws.holds_table("us-east-1", "Tickets-us-east-1")
    aws.deployed("eu-west-1", first.version)
    aws.holds_table("eu-west-1", "Tickets-eu-west-1")
    aws.parameter("eu-west-1", exists=False)
    aws.parameter("us-east-1")
    status, said = run(tmp_path, first, first.version, aws, capsys)
    assert status == 1
    assert f"eu-west-1: SSM parameter {LAYER} does not exist" in said
    assert "Pin the previous Powertools release (POWERTOOLS_VERSION in tickets_cdk/powertools.py" in said
    assert "us-east-1: SSM parameter" not in said.split("nothing was deployed:")[1]
    aws.all_called()


def test_a_deploy_in_progress_or_denied_access_stops_it(tmp_path, aws, capsys, history):
    first, _, _ = history
    aws.deployed("us-east-1", first.version, status="UPDATE_IN_PROGRESS")
    aws.holds_table("us-east-1", "Tickets-us-east-1")
    aws.stub("cloudformation", "eu-west-1").add_client_error(
        "describe_stacks", service_error_code="AccessDenied", http_status_code=403
    )
    aws.stub("cloudformation", "eu-west-1").add_client_error(
        "describe_stack_resources", service_error_code="AccessDenied", http_status_code=403
    )
    aws.parameter("us-east-1")
    aws.stub("ssm", "eu-west-1").add_client_error("get_parameter", service_error_code="AccessDeniedException")
    status, said = run(tmp_path, first, first.version, aws, capsys)
    assert status == 1
    assert "us-east-1: stack Tickets-us-east-1: UPDATE_IN_PROGRESS: another deploy is under way" in said
    assert "eu-west-1: stack Tickets-eu-west-1: cannot read the deployed stack (AccessDenied" in said
    assert "the deploy check (python -m tickets_deploy predeploy) needs cloudformation:DescribeStacks" in said
    assert (
        "eu-west-1 (slot 1 of tickets-counters): cannot find the stack holding table "
        "tickets-counters (AccessDenied" in said
    )
    assert "the deploy check (python -m tickets_deploy predeploy) needs cloudformation:DescribeStackResources" in said
    assert "the deploy check (python -m tickets_deploy predeploy) needs ssm:GetParameter" in said


def test_a_stack_deployed_before_versions_is_deployed_over(tmp_path, aws, capsys, history):
    first, _, _ = history
    aws.deployed("us-east-1", None)
    aws.holds_table("us-east-1", "Tickets-us-east-1")
    aws.deployed("eu-west-1", first.version)
    aws.holds_table("eu-west-1", "Tickets-eu-west-1")
    aws.parameter("us-east-1")
    aws.parameter("eu-west-1")
    status, said = run(tmp_path, first, first.version, aws, capsys)
    assert status == 0
    assert "us-east-1: stack Tickets-us-east-1: deployed without a recorded ledger version" in said


def test_an_assembly_from_a_ledger_this_checkout_does_not_have_is_refused(tmp_path, aws, capsys, history):
    first, _, branch = history
    aws.parameter("us-east-1")
    aws.parameter("eu-west-1")
    status, said = run(tmp_path, first, branch.version, aws, capsys)
    assert status == 1
    assert f"cdk.out was synthesised with ledger version {branch.version}, which this checkout's" in said


def test_no_assembly_or_a_forked_ledger_stops_before_any_call(tmp_path, capsys, history):
    def no_aws(service: str, region: str):
        raise AssertionError("no call expected")

    first, _, _ = history
    write_ledger_file(tmp_path / "tickets.lock.json", first)
    status = predeploy.main(["--assembly", str(tmp_path / "none")], client=no_aws)
    assert status == 1 and "no cloud assembly; synthesise first" in capsys.readouterr().err
    edited = (tmp_path / "tickets.lock.json").read_text().replace("false", "true")  # still JSON, hashes differently
    (tmp_path / "tickets.lock.json").write_text(edited)
    assembly(tmp_path, first.version)
    status = predeploy.main(
        ["--assembly", str(tmp_path), "--ledger", str(tmp_path / "tickets.lock.json")], client=no_aws
    )
    assert status == 1 and "edited by hand or merged line by line" in capsys.readouterr().err


def test_no_credentials_stop_it_once_naming_how_to_give_them(tmp_path, capsys, history, monkeypatch):
    """A newcomer's first `make deploy`, with no credentials anywhere: one line that says so and how to give them,
    not one NoCredentialsError per region and call (six lines for two regions)."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    nowhere = str(tmp_path / "none")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", nowhere)
    monkeypatch.setenv("AWS_CONFIG_FILE", nowhere)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    first, _, _ = history
    write_ledger_file(tmp_path / "tickets.lock.json", first)
    assembly(tmp_path / "cdk.out", first.version)
    status = predeploy.main(["--assembly", str(tmp_path / "cdk.out"), "--ledger", str(tmp_path / "tickets.lock.json")])
    said = capsys.readouterr()
    assert status == 1 and said.out == ""
    assert said.err.splitlines() == [
        f"predeploy: nothing was deployed: {NO_CREDENTIALS}; the check reads cloudformation:DescribeStacks, "
        "cloudformation:DescribeStackResources and ssm:GetParameter with them"
    ]


def test_the_module_command_runs_it(tmp_path):
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-m", "tickets_deploy", "predeploy", "--assembly", str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 1 and "no cloud assembly; synthesise first (cdk synth)" in ran.stderr


@pytest.mark.slow
def test_the_synthesised_assembly_names_each_stacks_region_version_and_layer_parameter(tmp_path):
    """The real app's cloud assembly, as make deploy hands it to the check."""
    from aws_cdk import App

    import app

    tickets = {"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    ledger_path = tmp_path / "tickets.lock.json"
    write_ledger_file(ledger_path, on(tickets))
    app.synthesize(App(context={"tickets": tickets}, outdir=str(tmp_path / "cdk.out")), ledger_path)
    version = on(tickets).version
    stacks = predeploy.read_assembly(tmp_path / "cdk.out")
    assert {(s.name, s.region, s.ledger_version) for s in stacks} == {
        ("Tickets-us-east-1", "us-east-1", version),
        ("Tickets-eu-west-1", "eu-west-1", version),
    }
    assert all(s.ssm_parameters == (LAYER,) for s in stacks)
