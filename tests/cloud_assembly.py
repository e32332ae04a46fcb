"""What `make deploy`'s check (tickets_deploy/predeploy.py) reads, for the tests of every tier that run it: a cloud
assembly as `cdk synth` writes it (`write_assembly`), and CloudFormation's answers from a test's own record of
which ledger version each region's stack runs (`CloudFormationStandIn`). tests/synth/test_predeploy.py stubs real
botocore clients instead, call by call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

LAYER = "/aws/service/powertools/python/arm64/python3.14/3.37.0"
ACCOUNT = "111111111111"


def write_assembly(
    directory: Path, version: str | None, regions=("us-east-1", "eu-west-1"), prefix: str = "Tickets"
) -> Path:
    """A cloud assembly: manifest.json and one template per stack (PREFIX-REGION), each resolving the layer's
    parameter and, with a `version`, outputting it as TicketsLedgerVersion."""
    directory.mkdir(parents=True, exist_ok=True)
    artifacts = {}
    for region in regions:
        name = f"{prefix}-{region}"
        template = {
            "Resources": {
                "Function": {
                    "Type": "AWS::Lambda::Function",
                    "Properties": {"Layers": [f"{{{{resolve:ssm:{LAYER}}}}}"]},
                }
            },
            "Outputs": {} if version is None else {"TicketsLedgerVersion": {"Value": version}},
        }
        (directory / f"{name}.template.json").write_text(json.dumps(template))
        artifacts[f"{name}.assets"] = {"type": "cdk:asset-manifest", "properties": {"file": f"{name}.assets.json"}}
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": f"aws://{ACCOUNT}/{region}",
            "properties": {"templateFile": f"{name}.template.json"},
        }
    artifacts["Tree"] = {"type": "cdk:tree", "properties": {"file": "tree.json"}}
    (directory / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": artifacts}))
    return directory


def _validation_error(operation: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": "ValidationError", "Message": message}}, operation)


class CloudFormationStandIn:
    """CloudFormation in every region, as predeploy reads it: a stack `Tickets-REGION` holding the tables `tables`
    where `running(region)` names the ledger version it runs (None: no stack there). `client` is predeploy's
    client factory; SSM answers that every parameter exists."""

    def __init__(self, running: Callable[[str], str | None], tables: tuple[str, ...] = ("tickets-counters",)):
        self.running, self.tables = running, tables

    def client(self, service: str, region: str) -> Any:
        return _Ssm() if service == "ssm" else _Region(self, region)


class _Ssm:
    def get_parameter(self, Name: str) -> dict:  # noqa: N803 - botocore's parameter names
        return {"Parameter": {"Name": Name, "Type": "String", "Value": "arn:aws:lambda:layer"}}


class _Region:
    def __init__(self, cloud: CloudFormationStandIn, region: str):
        self.cloud, self.region, self.name = cloud, region, f"Tickets-{region}"

    def describe_stacks(self, StackName: str) -> dict:  # noqa: N803
        version = self.cloud.running(self.region)
        if version is None or StackName != self.name:
            raise _validation_error("DescribeStacks", f"Stack with id {StackName} does not exist")
        outputs = [{"OutputKey": "TicketsLedgerVersion", "OutputValue": version}]
        return {"Stacks": [{"StackName": self.name, "StackStatus": "UPDATE_COMPLETE", "Outputs": outputs}]}

    def describe_stack_resources(self, PhysicalResourceId: str) -> dict:  # noqa: N803
        if self.cloud.running(self.region) is None or PhysicalResourceId not in self.cloud.tables:
            raise _validation_error("DescribeStackResources", f"Stack for {PhysicalResourceId} does not exist")
        resource = {
            "StackName": self.name,
            "StackId": f"arn:aws:cloudformation:{self.region}:{ACCOUNT}:stack/{self.name}/1",
            "LogicalResourceId": "TicketsTable",
            "PhysicalResourceId": PhysicalResourceId,
            "ResourceType": "AWS::DynamoDB::Table",
            "ResourceStatus": "UPDATE_COMPLETE",
        }
        return {"StackResources": [resource]}
