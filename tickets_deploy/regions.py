"""The regions the stack can be deployed to: Lambda Function URLs (cfn-lint's schemas, tests/synth/test_stack.py)
and Powertools' public layer parameters (its update_ssm.yml workflow, November 2026) are there. Others are refused."""

from __future__ import annotations

import re

SERVED_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-south-1",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)
# Commercial regions without Function URLs.
NO_FUNCTION_URLS = frozenset(
    {
        "ap-east-2",
        "ap-south-2",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-west-1",
        "eu-central-2",
        "eu-south-2",
        "il-central-1",
        "me-central-1",
        "mx-central-1",
    }
)
_OTHER_PARTITIONS = {"cn-": "aws-cn", "us-gov-": "aws-us-gov", "us-iso": "an isolated", "eusc-": "aws-eusc"}
_REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")


def refusal(region: object) -> str | None:
    """None when the stack can be deployed to `region`; otherwise why it cannot."""
    if isinstance(region, str) and region in SERVED_REGIONS:
        return None
    name = region if isinstance(region, str) else ""
    partition = next((label for prefix, label in _OTHER_PARTITIONS.items() if name.startswith(prefix)), None)
    if partition is not None:
        why = (
            f"it is in the {partition} partition, and this stack supports the commercial partition (aws) only: "
            "it resolves its Powertools layer from the public SSM parameters Powertools writes in commercial "
            "regions, and is checked (Function URLs, cfn-lint) there only"
        )
    elif name in NO_FUNCTION_URLS:
        why = "Lambda Function URLs (AWS::Lambda::Url), which the stack serves through, are not available there"
    elif _REGION_NAME.fullmatch(name):
        why = (
            "it is not a region, or not one where both Lambda Function URLs and Powertools' public layer "
            "parameters are known to exist (SERVED_REGIONS in tickets_deploy/regions.py)"
        )
    else:
        why = "it is not a region name such as us-east-1"
    return f"the stack cannot be deployed to {region!r}: {why} (it serves: {', '.join(sorted(SERVED_REGIONS))})"
