"""Who signed a request (the IAM authorizer's fields, the caller that scopes idempotency records and journals) and the
access rules, matched (docs/how-to/access-rules.md); tickets_deploy/access.py checks them at synthesis."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import Forbidden

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


OPERATIONS = ("issue", "series", "void", "read", "workers")  # routes.Route.operation
# Here, with no AWS import: synthesis imports them.
ACCESS_PARAMETERS_ENV = "TICKETS_ACCESS_PARAMETERS"  # comma-separated parameter names; unset: no rules
ACCESS_DIGEST_ENV = "TICKETS_ACCESS_DIGEST"  # unread: new rules, new environment
RULES_PARAMETER_BYTES = 4096  # an SSM standard-tier value's limit (the stack splits the rules by it)
MAX_RULES_PARAMETERS = 10  # what one GetParameters call reads
ACCOUNT_PATTERN = re.compile(r"[0-9]{12}")
_PARTITION = r"aws(?:-cn|-us-gov|-iso|-iso-b)?"
_IAM_NAME = r"[A-Za-z0-9+=,.@_-]{1,64}"
# A role's or user's ARN, any path: groups account, role|user, name.
IAM_ARN_PATTERN = re.compile(
    rf"arn:{_PARTITION}:iam::([0-9]{{12}}):(role|user)/(?:[A-Za-z0-9+=,.@_/-]{{0,510}}/)?({_IAM_NAME})"
)
ASSUMED_ROLE_PATTERN = re.compile(rf"arn:{_PARTITION}:sts::([0-9]{{12}}):assumed-role/({_IAM_NAME})/[^/]+")
# The other signers a userArn names: root, a federated user.
OTHER_SIGNER_PATTERNS = (
    re.compile(rf"arn:{_PARTITION}:iam::([0-9]{{12}}):root"),
    re.compile(rf"arn:{_PARTITION}:sts::([0-9]{{12}}):federated-user/{_IAM_NAME}"),
)


@dataclass(frozen=True)
class Identity:
    """The request's signer, from the URL's IAM authorizer (empty with auth NONE)."""

    account: str = ""
    arn: str = ""  # a user's ARN, or arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION (no role path)
    organization: str = ""

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Identity:
        iam = iam_fields(event)
        return cls(iam.get("accountId", ""), iam.get("userArn", ""), iam.get("principalOrgId", ""))

    @property
    def is_signer(self) -> bool:
        """A 12-digit account and a signer's ARN in it, as a Function URL says (a direct invocation may not)."""
        return ACCOUNT_PATTERN.fullmatch(self.account) is not None and _signer_account(self.arn) == self.account

    def describe(self) -> str:
        if self.is_signer:
            return self.arn
        return "a caller who is no signer" if self.account or self.arn else "an unsigned caller"


def _signer_account(arn: str) -> str | None:
    """The account of a signer's ARN; None for anything else (a role's own: its sessions sign)."""
    user = IAM_ARN_PATTERN.fullmatch(arn)
    if user is not None:
        return user.group(1) if user.group(2) == "user" else None
    for pattern in (ASSUMED_ROLE_PATTERN, *OTHER_SIGNER_PATTERNS):
        if (match := pattern.fullmatch(arn)) is not None:
            return match.group(1)
    return None


@dataclass(frozen=True)
class Grant:
    principal: str
    operations: Mapping[str, tuple[str, ...]]

    def names(self, identity: Identity) -> bool:
        if not identity.is_signer:
            return False
        if self.principal in ("*", identity.account, identity.organization):
            return True
        arn = IAM_ARN_PATTERN.fullmatch(self.principal)
        if arn is None:
            return False
        account, kind, name = arn.groups()
        if kind == "user":
            return identity.arn == self.principal
        session = ASSUMED_ROLE_PATTERN.fullmatch(identity.arn)
        return session is not None and session.groups() == (account, name)

    def allows(self, operation: str, key: str) -> bool:
        return any(
            key.startswith(pattern[:-1]) if pattern.endswith("*") else key == pattern
            for pattern in self.operations.get(operation, ())
        )


@dataclass(frozen=True)
class Rules:
    grants: tuple[Grant, ...]

    def allows(self, identity: Identity, operation: str, key: str) -> bool:
        return any(grant.names(identity) and grant.allows(operation, key) for grant in self.grants)

    def to_json(self) -> dict[str, dict[str, list[str]]]:
        return {g.principal: {op: list(keys) for op, keys in g.operations.items()} for g in self.grants}

    @classmethod
    def from_json(cls, raw: Mapping[str, Mapping[str, Any]]) -> Rules:
        return cls.from_entries(raw.items())

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, Mapping[str, Any]]]) -> Rules:
        return cls(tuple(Grant(p, {op: tuple(keys) for op, keys in ops.items()}) for p, ops in entries))
