"""The regions the stack can be deployed to, and why any other is refused.

The regions where AWS publishes the Powertools for AWS Lambda (Python) v3 layer the stack uses
(account 017000801446, commercial partition `aws`). From the region matrix of
aws-powertools/powertools-lambda-python .github/workflows/reusable_deploy_v3_layer_stack.yml,
plus ap-southeast-5, ap-southeast-7 and mx-central-1 (that repository's issues #5383, #6076,
#6075, done in 2025); checked November 2026, when ap-southeast-6 (#7355), ap-east-2 and
eusc-de-east-1 (#8000) had no layer. The China and GovCloud layers live in other partitions
and accounts, which stacks/powertools.py does not use. Add a region here once AWS lists it.
"""

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
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)
_OTHER_PARTITIONS = {"cn-": "aws-cn", "us-gov-": "aws-us-gov", "us-iso": "an isolated partition", "eusc-": "aws-eusc"}
_REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")


def refusal(region: object) -> str | None:
    """None when the stack can be deployed to `region`; otherwise why it cannot, for a ConfigError."""
    if isinstance(region, str) and region in SERVED_REGIONS:
        return None
    partition = next(
        (name for prefix, name in _OTHER_PARTITIONS.items() if isinstance(region, str) and region.startswith(prefix)),
        None,
    )
    if partition is not None:
        why = (
            f"it is in the {partition} partition, and the stack uses the Powertools layer that AWS "
            "publishes in the commercial partition only"
        )
    elif isinstance(region, str) and _REGION_NAME.fullmatch(region):
        why = (
            "it is not a region, or the Powertools layer the stack uses is not published there yet "
            "(SERVED_REGIONS in tickets_deploy/regions.py says where it is)"
        )
    else:
        why = "it is not a region name such as us-east-1"
    return f"the stack cannot be deployed to {region!r}: {why} (the stack serves: {', '.join(sorted(SERVED_REGIONS))})"
