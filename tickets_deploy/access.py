"""The `access` field's rules, checked at synthesis so the function never gets a malformed one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tickets.access import IAM_ARN_PATTERN, OPERATIONS, Rules
from tickets.keys import KEY_PATTERN

ACCOUNT_PATTERN = re.compile(r"[0-9]{12}")
ORGANIZATION_PATTERN = re.compile(r"o-[a-z0-9]{10,32}")  # AWS Organizations' id rule
PREFIX_PATTERN = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._:-]{0,98})?\*")  # the start of a key, then `*`
PRINCIPAL_RULE = (
    'a role ARN ("arn:aws:iam::111122223333:role/NAME"), a user ARN ("arn:aws:iam::111122223333:user/NAME"), '
    'a 12-digit account id, an organization id ("o-" and 10-32 of a-z 0-9) or "*"'
)
PATTERN_RULE = 'a key, a key prefix ending in "*" ("orders-*"), or "*" (every key)'


class AccessRuleError(ValueError):
    """A malformed rule; the message names where it is and the rule it breaks."""


def parse_rules(raw: Any, where: str) -> Rules:
    if not isinstance(raw, Mapping):
        raise AccessRuleError(
            f'{where}: must map principals to operations on keys, e.g. {{"111122223333": {{"issue": ["orders-*"]}}}}, '
            f"got {raw!r}"
        )
    checked: dict[str, dict[str, tuple[str, ...]]] = {}
    for principal, operations in raw.items():
        at = f"{where}[{principal!r}]"
        if not isinstance(principal, str) or not (
            principal == "*"
            or ACCOUNT_PATTERN.fullmatch(principal)
            or ORGANIZATION_PATTERN.fullmatch(principal)
            or IAM_ARN_PATTERN.fullmatch(principal)
        ):
            raise AccessRuleError(f"{at}: the principal must be {PRINCIPAL_RULE}")
        if not isinstance(operations, Mapping) or not operations:
            raise AccessRuleError(
                f"{at}: must name at least one operation ({', '.join(OPERATIONS)}) with its key patterns, "
                f'e.g. {{"issue": ["orders-*"]}}, got {operations!r}'
            )
        checked[principal] = {}
        for operation, patterns in operations.items():
            if operation not in OPERATIONS:
                raise AccessRuleError(f"{at}: unknown operation {operation!r}; the operations: {', '.join(OPERATIONS)}")
            checked[principal][operation] = check_patterns(patterns, f"{at}.{operation}")
    return Rules.from_json(checked)


def check_patterns(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, (list, tuple)) or not raw:
        raise AccessRuleError(f"{where}: must be a non-empty list of key patterns ({PATTERN_RULE}), got {raw!r}")
    for index, pattern in enumerate(raw):
        if not isinstance(pattern, str) or not (KEY_PATTERN.fullmatch(pattern) or PREFIX_PATTERN.fullmatch(pattern)):
            raise AccessRuleError(f"{where}[{index}]: {pattern!r} is not {PATTERN_RULE}")
        if pattern in raw[:index]:
            raise AccessRuleError(f"{where}[{index}]: {pattern!r} is listed twice")
    return tuple(raw)
