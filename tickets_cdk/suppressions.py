"""The security checks that do not apply to a TicketService, and why, on its resources so a user's app needs no
suppression of its own (docs/reference/construct.md#encryption-and-security-checks)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

NO_DLQ = "Invoked synchronously by its Function URL: the caller gets every failure; a DLQ gets only async ones."
NO_VPC = "Reaches only AWS endpoints (TLS, SigV4) and no private resource: a VPC would add cost and cold-start time."
NO_SECRET_IN_ENVIRONMENT = (
    "The environment holds names and settings, no secret; Lambda encrypts it at rest with its own key."
)
UNRESERVED_CONCURRENCY = (
    "reserved_concurrency is off by default (docs/reference/construct.md#reserved-concurrency): set it to cap cost."
)
TRACING_NEEDS_EVERY_RESOURCE = (
    "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permission; every other statement "
    "names its own log group, tables, key or parameters."
)
KEY_GRANT_VARIANTS = "grant_encrypt_decrypt's GenerateDataKey* and ReEncrypt*, on the tables' one key (encryption_key)."
# cdk-nag's findings on the function role's policy (rule, what it found) and their reasons.
ROLE_FINDINGS = [("AwsSolutions-IAM5", "Resource::*", TRACING_NEEDS_EVERY_RESOURCE)]
KEY_FINDINGS = [
    ("AwsSolutions-IAM5", f"Action::kms:{action}", KEY_GRANT_VARIANTS) for action in ("GenerateDataKey*", "ReEncrypt*")
]


def explain_role(role: iam.Role, *, encrypted: bool) -> None:
    """The role policy's wildcards that cannot be narrowed, on the policy; called once the role has every grant."""
    resource = role.node.find_child("DefaultPolicy").node.default_child  # the role has its statements by now
    assert isinstance(resource, CfnResource)
    findings = ROLE_FINDINGS + (KEY_FINDINGS if encrypted else [])
    rows = [{"id": rule, "reason": reason, "applies_to": [found]} for rule, found, reason in findings]
    resource.add_metadata("cdk_nag", {"rules_to_suppress": rows})  # cdk-nag 2; cdk-nag 3 reads `Rule[found]`:
    Validations.of(resource).acknowledge(
        *(Acknowledgment(id=f"{rule}[{found}]", reason=reason) for rule, found, reason in findings)
    )


def explain(function: lambda_.Function, *, reserved_concurrency: int | None) -> None:
    checkov = [("CKV_AWS_116", NO_DLQ), ("CKV_AWS_117", NO_VPC), ("CKV_AWS_173", NO_SECRET_IN_ENVIRONMENT)]
    cfn_nag = [("W89", NO_VPC)]
    if reserved_concurrency is None:
        checkov.append(("CKV_AWS_115", UNRESERVED_CONCURRENCY))
        cfn_nag.append(("W92", UNRESERVED_CONCURRENCY))
    resource = function.node.default_child
    assert isinstance(resource, CfnResource)
    resource.add_metadata("checkov", {"skip": [{"id": check, "comment": reason} for check, reason in checkov]})
    resource.add_metadata(
        "cfn_nag", {"rules_to_suppress": [{"id": check, "reason": reason} for check, reason in cfn_nag]}
    )
