"""Access rules: which caller may do which operation on which keys (docs/callers.md#access-rules).

Plain data and matching, no AWS: the deploy side checks a config's rules with `parse_rules`, the
function decides with `Rules.allows`. A rule maps a principal to operations and key patterns:

    {"arn:aws:iam::111122223333:role/orders": {"issue": ["orders", "orders-*"]}, "o-abc123def4": {"read": ["*"]}}

Principals: a role ARN (matched by account and role name: the assumed-role ARN a Function URL event
carries has no role path), a user ARN, a 12-digit account id (any principal of that account), an
organization id (`principalOrgId`), or `*` (any signed caller). Patterns: a key, a prefix ending in `*`,
or `*`. The function decides from the event's `requestContext.authorizer.iam` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .keys import KEY_PATTERN

# What each route's request does (routes.Route.operation); `/_health` needs none.
OPERATIONS = ("issue", "series", "void", "read")
ANYONE = "*"
ACCOUNT_PATTERN = re.compile(r"[0-9]{12}")
ORGANIZATION_PATTERN = re.compile(r"o-[a-z0-9]{10,32}")  # AWS Organizations' id rule
_PARTITION = r"aws(?:-cn|-us-gov|-iso|-iso-b)?"
_IAM_NAME = r"[A-Za-z0-9+=,.@_-]{1,64}"
# A role's or a user's ARN, with or without a path: group 1 the account, group 2 role/user, group 3 the name.
IAM_ARN_PATTERN = re.compile(
    rf"arn:{_PARTITION}:iam::([0-9]{{12}}):(role|user)/(?:[A-Za-z0-9+=,.@_/-]{{0,510}}/)?({_IAM_NAME})"
)
# The caller a Function URL event names for a role session: no path, and the session's name last.
ASSUMED_ROLE_PATTERN = re.compile(rf"arn:{_PARTITION}:sts::([0-9]{{12}}):assumed-role/({_IAM_NAME})/[^/]+")
# A key pattern: a key, or the start of one (possibly empty) followed by `*`.
_PREFIX_PATTERN = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._:-]{0,98})?\*")
PRINCIPAL_RULE = (
    'a role ARN ("arn:aws:iam::111122223333:role/NAME"), a user ARN ("arn:aws:iam::111122223333:user/NAME"), '
    'a 12-digit account id, an organization id ("o-" and 10-32 of a-z 0-9) or "*"'
)
PATTERN_RULE = 'a key, a key prefix ending in "*" ("orders-*"), or "*" (every key)'


class AccessRuleError(ValueError):
    """A malformed rule; the message names where it is and the rule it breaks."""


@dataclass(frozen=True)
class Identity:
    """Who signed a request, as the Function URL's IAM authorizer tells (all empty with auth NONE)."""

    account: str = ""
    arn: str = ""  # userArn: a user's ARN, or arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
    organization: str = ""

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Identity:
        iam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("iam") or {}
        return cls(
            account=str(iam.get("accountId") or ""),
            arn=str(iam.get("userArn") or ""),
            organization=str(iam.get("principalOrgId") or ""),
        )

    @property
    def signed(self) -> bool:
        return bool(self.account or self.arn)

    def describe(self) -> str:
        return self.arn or (f"account {self.account}" if self.account else "an unsigned caller")


@dataclass(frozen=True)
class Grant:
    """One principal's rights: for each operation, the key patterns it may act on."""

    principal: str
    operations: Mapping[str, tuple[str, ...]]

    def names(self, identity: Identity) -> bool:
        """Is `identity` this principal?"""
        if not identity.signed:
            return False
        if self.principal == ANYONE:
            return True
        if ACCOUNT_PATTERN.fullmatch(self.principal):
            return identity.account == self.principal
        if self.principal.startswith("o-"):
            return identity.organization == self.principal
        arn = IAM_ARN_PATTERN.fullmatch(self.principal)
        if arn is None:
            return False
        account, kind, name = arn.groups()
        if kind == "user":
            return identity.arn == self.principal
        session = ASSUMED_ROLE_PATTERN.fullmatch(identity.arn)
        return session is not None and session.groups() == (account, name)

    def allows(self, operation: str, key: str) -> bool:
        return any(_key_matches(pattern, key) for pattern in self.operations.get(operation, ()))


@dataclass(frozen=True)
class Rules:
    """Every principal's grant; what none of them allows is refused."""

    grants: tuple[Grant, ...]

    def allows(self, identity: Identity, operation: str, key: str) -> bool:
        return any(grant.names(identity) and grant.allows(operation, key) for grant in self.grants)

    def to_json(self) -> dict[str, dict[str, list[str]]]:
        return {grant.principal: {op: list(keys) for op, keys in grant.operations.items()} for grant in self.grants}

    def encode(self) -> str:
        """Compact JSON, principals and operations in a fixed order: the same rules, the same text."""
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> Rules:
        return parse_rules(json.loads(text), "access")


def _key_matches(pattern: str, key: str) -> bool:
    return key.startswith(pattern[:-1]) if pattern.endswith("*") else key == pattern


def parse_rules(raw: Any, where: str, *, principal_ok: Any = None) -> Rules:
    """`raw` (principal -> {operation: [patterns]}) checked; AccessRuleError names `where` and the rule.
    `principal_ok(principal)`: True for a principal to take as it is (a deploy-time token, unknown until
    CloudFormation resolves it)."""
    if not isinstance(raw, Mapping):
        raise AccessRuleError(
            f'{where}: must map principals to operations on keys, e.g. {{"111122223333": {{"issue": ["orders-*"]}}}}, '
            f"got {raw!r}"
        )
    grants = []
    for principal, operations in raw.items():
        at = f"{where}[{principal!r}]"
        if not (principal_ok is not None and principal_ok(principal)):
            check_principal(principal, at)
        grants.append(Grant(principal, _parse_operations(operations, at)))
    return Rules(tuple(grants))


def check_principal(principal: Any, where: str) -> None:
    if not isinstance(principal, str) or not (
        principal == ANYONE
        or ACCOUNT_PATTERN.fullmatch(principal)
        or ORGANIZATION_PATTERN.fullmatch(principal)
        or IAM_ARN_PATTERN.fullmatch(principal)
    ):
        raise AccessRuleError(f"{where}: the principal must be {PRINCIPAL_RULE}")


def _parse_operations(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping) or not raw:
        raise AccessRuleError(
            f"{where}: must name at least one operation ({', '.join(OPERATIONS)}) with its key patterns, "
            f'e.g. {{"issue": ["orders-*"]}}, got {raw!r}'
        )
    operations = {}
    for operation, patterns in raw.items():
        if operation not in OPERATIONS:
            raise AccessRuleError(
                f"{where}: unknown operation {operation!r}; the operations are {', '.join(OPERATIONS)}"
            )
        operations[operation] = check_patterns(patterns, f"{where}.{operation}")
    return operations


def check_patterns(raw: Any, where: str) -> tuple[str, ...]:
    """A non-empty list of key patterns (PATTERN_RULE), none twice."""
    if not isinstance(raw, (list, tuple)) or not raw:
        raise AccessRuleError(f"{where}: must be a non-empty list of key patterns ({PATTERN_RULE}), got {raw!r}")
    for index, pattern in enumerate(raw):
        if not isinstance(pattern, str) or not (KEY_PATTERN.fullmatch(pattern) or _PREFIX_PATTERN.fullmatch(pattern)):
            raise AccessRuleError(f"{where}[{index}]: {pattern!r} is not {PATTERN_RULE}")
        if pattern in raw[:index]:
            raise AccessRuleError(f"{where}[{index}]: {pattern!r} is listed twice")
    return tuple(raw)
