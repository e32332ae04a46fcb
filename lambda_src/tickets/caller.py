"""Who signed a request: the IAM authorizer's fields as the function reads them, and the caller that scopes the
idempotency records and the series journal.

A Function URL with AWS_IAM auth puts `requestContext.authorizer.iam` in the event (strings, or null); with auth
NONE it puts no authorizer. Any other shape (a string, a list, an `iam` that is no object, a field that is no
string) no Function URL sends: only a direct `lambda:InvokeFunction`, which can write the whole event, can. Such an
event is refused with 403 before anything else is read (docs/callers.md#access-rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import Forbidden

# The fields of the IAM authorizer the function reads (AWS also sends accessKey, userId, cognitoIdentity).
IAM_FIELDS = ("accountId", "userArn", "principalOrgId", "callerId")


def iam_fields(event: Mapping[str, Any]) -> dict[str, str]:
    """The fields of IAM_FIELDS the event's IAM authorizer holds, each a non-empty string (null, empty or absent:
    left out); {} without an authorizer. Forbidden when the authorizer is not what a Function URL sends."""
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    if authorizer is None:
        return {}
    iam = authorizer.get("iam") if isinstance(authorizer, Mapping) else None
    if not isinstance(iam, Mapping):
        raise _malformed("is not an object holding an `iam` object")
    fields = {}
    for name in IAM_FIELDS:
        value = iam.get(name)
        if value is not None and not isinstance(value, str):
            raise _malformed(f"has an iam.{name} that is not a string")
        if value:
            fields[name] = value
    return fields


def caller(event: Mapping[str, Any]) -> str:
    """Who signed the request (AWS_IAM auth); with auth NONE everyone is the same anonymous caller.
    An assumed role's ARN ends in the session name, which every AssumeRole may change (botocore's
    refreshing credentials pick a new one): the role, not the session, is the caller."""
    iam = iam_fields(event)
    principal: str = iam.get("userArn") or iam.get("callerId") or "anonymous"
    if ":assumed-role/" in principal:
        return principal.rsplit("/", 1)[0]  # arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
    if principal.startswith("AROA"):
        return principal.split(":", 1)[0]  # a role's unique id, then :SESSION
    return principal


def _malformed(what: str) -> Forbidden:
    return Forbidden(
        f"requestContext.authorizer {what}: no Function URL sends such an event (only a direct invocation of the "
        "function can), so its caller is unknown. Nothing was done; call the function through its URL"
    )
