"""Access rules, matched (docs/callers.md#access-rules); tickets_deploy/access.py checks them at synthesis."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

OPERATIONS = ("issue", "series", "void", "read")  # what each route does (routes.Route.operation)
# Where a deployed function finds its rules: SSM parameters the stack writes (tickets_cdk/access_rules.py) and
# access_store.py reads. Here, in a module with no AWS import, so that synthesis (which imports them) needs no
# botocore.
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


@dataclass(frozen=True)
class Identity:
    """The request's signer, from the URL's IAM authorizer (empty with auth NONE)."""

    account: str = ""
    arn: str = ""  # a user's ARN, or arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION (no role path)
    organization: str = ""

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Identity:
        iam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("iam") or {}
        return cls(str(iam.get("accountId") or ""), str(iam.get("userArn") or ""), str(iam.get("principalOrgId") or ""))

    def describe(self) -> str:
        return self.arn or (f"account {self.account}" if self.account else "an unsigned caller")


@dataclass(frozen=True)
class Grant:
    principal: str
    operations: Mapping[str, tuple[str, ...]]

    def names(self, identity: Identity) -> bool:
        if not (identity.account or identity.arn):
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
        """One grant per (principal, operations) entry. A principal may come twice (a role named in the rules
        and granted by the construct, whose ARN CloudFormation resolves): a caller may do what any allows."""
        return cls(tuple(Grant(p, {op: tuple(keys) for op, keys in ops.items()}) for p, ops in entries))
