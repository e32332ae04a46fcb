"""The security checks that do not apply to a TicketService, and why, written on the resources themselves
as AWS Solutions Constructs do, so a user's app passes its gate on the construct's resources without a
suppression of its own: checkov reads `Metadata.checkov.skip`, cfn_nag `Metadata.cfn_nag.rules_to_suppress`,
cdk-nag 2 `Metadata.cdk_nag.rules_to_suppress` (`applies_to` naming the finding), cdk-nag 3 the construct
tree's acknowledged rules (aws-cdk-lib's `Validations.acknowledge`, which it reads on a resource and its
scopes). Neither needs cdk-nag installed. docs/reference/construct.md#encryption-and-security-checks lists
them; a check that does apply (a customer-managed key: the `encryption_key` prop) is never suppressed here.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, CfnResource, Validations
from aws_cdk import aws_iam as iam
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


TRACING_NEEDS_EVERY_RESOURCE = (
    "Active tracing: X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permission "
    "(IAM's service authorization reference), so Lambda grants them on '*'; every other statement of the "
    "function's role names its own log group, tables, key or parameters."
)
KEY_GRANT_VARIANTS = (
    "On the one customer-managed key the tables use (encryption_key), not on '*': DynamoDB encrypts and "
    "decrypts the items with it as the function, and the wildcard covers only that action's variants "
    "(GenerateDataKey*, ReEncrypt*), as aws-cdk-lib's grant_encrypt_decrypt writes them."
)
# cdk-nag's findings on the function role's policy (rule, what it found) and their reasons.
ROLE_FINDINGS = [("AwsSolutions-IAM5", "Resource::*", TRACING_NEEDS_EVERY_RESOURCE)]
KEY_FINDINGS = [
    ("AwsSolutions-IAM5", f"Action::kms:{action}", KEY_GRANT_VARIANTS) for action in ("GenerateDataKey*", "ReEncrypt*")
]


def explain_role(role: iam.Role, *, encrypted: bool) -> None:
    """The wildcards of the function role's policy that cdk-nag finds and cannot be narrowed, each with its
    reason, on the policy itself. Called once the role has every grant the construct gives it."""
    policy = role.node.try_find_child("DefaultPolicy")
    assert isinstance(policy, iam.Policy), "the function's role has its statements (its logs) by now"
    resource = policy.node.default_child
    assert isinstance(resource, CfnResource)
    findings = ROLE_FINDINGS + (KEY_FINDINGS if encrypted else [])
    rows = [{"id": rule, "reason": reason, "applies_to": [found]} for rule, found, reason in findings]
    _suppress(resource, "cdk_nag", "rules_to_suppress", rows)  # cdk-nag 2; cdk-nag 3 reads `Rule[found]`:
    Validations.of(resource).acknowledge(
        *(Acknowledgment(id=f"{rule}[{found}]", reason=reason) for rule, found, reason in findings)
    )


def explain(function: lambda_.Function, *, reserved_concurrency: int | None) -> None:
    """Every check that does not apply to the function, with the reason, on its resource."""
    checkov = [("CKV_AWS_116", NO_DLQ), ("CKV_AWS_117", NO_VPC), ("CKV_AWS_173", NO_SECRET_IN_ENVIRONMENT)]
    cfn_nag = [("W89", NO_VPC)]
    if reserved_concurrency is None:
        checkov.append(("CKV_AWS_115", UNRESERVED_CONCURRENCY))
        cfn_nag.append(("W92", UNRESERVED_CONCURRENCY))
    resource = function.node.default_child
    assert isinstance(resource, CfnResource)
    _suppress(resource, "checkov", "skip", [{"id": check, "comment": reason} for check, reason in checkov])
    _suppress(resource, "cfn_nag", "rules_to_suppress", [{"id": check, "reason": reason} for check, reason in cfn_nag])


def _suppress(resource: CfnResource, tool: str, entry: str, rows: list[dict[str, Any]]) -> None:
    """Add these suppressions to the tool's metadata on the resource, keeping any already there."""
    metadata = resource.get_metadata(tool) or {}
    resource.add_metadata(tool, {**metadata, entry: [*metadata.get(entry, []), *rows]})
