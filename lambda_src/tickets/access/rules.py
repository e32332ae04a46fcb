"""Access rules, matched (docs/how-to/access-rules.md); tickets_deploy/access.py checks them at synthesis."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..caller import iam_fields

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
