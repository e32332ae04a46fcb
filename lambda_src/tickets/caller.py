"""Who signed a request: the IAM authorizer's fields, and the caller that scopes idempotency records and journals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import Forbidden

IAM_FIELDS = ("accountId", "userArn", "principalOrgId", "callerId")  # the ones the function reads


def iam_fields(event: Mapping[str, Any]) -> dict[str, str]:
    """The IAM_FIELDS the authorizer holds as non-empty strings; Forbidden for a malformed one."""
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    if authorizer is None:
        return {}
    iam = authorizer.get("iam") if isinstance(authorizer, Mapping) else None
    if not isinstance(iam, Mapping) or any(not isinstance(iam.get(name), (str, type(None))) for name in IAM_FIELDS):
        raise Forbidden(
            "requestContext.authorizer is not what a Function URL sends (only a direct invocation can send it): "
            "the caller is unknown. Nothing was done; call the function through its URL"
        )
    return {name: iam[name] for name in IAM_FIELDS if iam.get(name)}


def caller(event: Mapping[str, Any]) -> str:
    """The signer: an assumed role without its session (refreshed credentials are the same caller)."""
    iam = iam_fields(event)
    principal: str = iam.get("userArn") or iam.get("callerId") or "anonymous"
    if ":assumed-role/" in principal:
        return principal.rsplit("/", 1)[0]  # arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
    if principal.startswith("AROA"):
        return principal.split(":", 1)[0]  # a role's unique id, then :SESSION
    return principal
