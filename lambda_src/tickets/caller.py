"""Who signed a request: the idempotency records' and the series journal's caller."""

from __future__ import annotations

from typing import Any


def caller(event: dict[str, Any]) -> str:
    """Who signed the request (AWS_IAM auth); with auth NONE everyone is the same anonymous caller.
    An assumed role's ARN ends in the session name, which every AssumeRole may change (botocore's
    refreshing credentials pick a new one): the role, not the session, is the caller."""
    iam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("iam") or {}
    principal: str = iam.get("userArn") or iam.get("callerId") or "anonymous"
    if ":assumed-role/" in principal:
        return principal.rsplit("/", 1)[0]  # arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
    if principal.startswith("AROA"):
        return principal.split(":", 1)[0]  # a role's unique id, then :SESSION
    return principal
