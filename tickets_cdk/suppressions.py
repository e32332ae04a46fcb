"""The security checks that do not apply to a TicketService, and why, written on the resources themselves as AWS
Solutions Constructs do: checkov reads `Metadata.checkov.skip`, cfn_nag `Metadata.cfn_nag.rules_to_suppress`,
cdk-nag `Metadata.cdk_nag.rules_to_suppress`. docs/reference/construct.md#encryption-and-security-checks lists them;
a check that does apply (a customer-managed key: the `encryption_key` prop) is never suppressed here.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import CfnResource
from aws_cdk import aws_lambda as lambda_

NO_DLQ = (
    "The function is invoked synchronously through its Function URL: the caller gets every failure as an "
    "HTTP answer and retries it; a dead-letter queue receives only failed asynchronous invocations, of which "
    "there are none."
)
NO_VPC = (
    "The function reaches only AWS endpoints (DynamoDB, SSM, CloudWatch) over TLS with SigV4 and holds no "
    "private network resource; a VPC would add NAT or endpoint cost and cold-start time and protect nothing."
)
NO_SECRET_IN_ENVIRONMENT = (
    "The environment holds table names, counter settings and SSM parameter names, no secret: Lambda encrypts "
    "it at rest with its own key, and a customer-managed key would protect nothing more."
)
UNRESERVED_CONCURRENCY = (
    "reserved_concurrency is off by default (docs/reference/construct.md#reserved-concurrency): a reservation "
    "takes from the account's shared pool and cannot be made in a new account (limit 10); set it to cap cost or abuse."
)


def explain(function: lambda_.Function, *, reserved_concurrency: int | None) -> None:
    """Every check that does not apply to the function, with the reason, on its resource."""
    checkov = [("CKV_AWS_116", NO_DLQ), ("CKV_AWS_117", NO_VPC), ("CKV_AWS_173", NO_SECRET_IN_ENVIRONMENT)]
    cfn_nag = [("W89", NO_VPC)]
    if reserved_concurrency is None:
        checkov.append(("CKV_AWS_115", UNRESERVED_CONCURRENCY))
        cfn_nag.append(("W92", UNRESERVED_CONCURRENCY))
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, CfnResource)
    suppress(cfn_function, checkov=checkov, cfn_nag=cfn_nag)


def suppress(
    resource: CfnResource,
    *,
    checkov: Iterable[tuple[str, str]] = (),
    cfn_nag: Iterable[tuple[str, str]] = (),
    cdk_nag: Iterable[tuple[str, str]] = (),
) -> None:
    """Add these suppressions (check id, reason) to the resource's metadata, keeping any already there."""
    for tool, entry, rows in (
        ("checkov", "skip", [{"id": check, "comment": reason} for check, reason in checkov]),
        ("cfn_nag", "rules_to_suppress", [{"id": check, "reason": reason} for check, reason in cfn_nag]),
        ("cdk_nag", "rules_to_suppress", [{"id": check, "reason": reason} for check, reason in cdk_nag]),
    ):
        if rows:
            metadata = resource.get_metadata(tool) or {}
            resource.add_metadata(tool, {**metadata, entry: [*metadata.get(entry, []), *rows]})
