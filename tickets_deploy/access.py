"""The `access` field (cdk.json `tickets.access`, prop `access`): who may do what, checked at synthesis.

The rules' own shape is the function's (tickets.access.parse_rules), so the deploy side and the function
accept exactly the same rules. Rules are not permanent: the ledger records none of them, and changing them
never repeats a ticket (docs/callers.md#access-rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickets.access import AccessRuleError, Rules, parse_rules


def parse_access(raw: Any, auth: str, where: str) -> Rules | None:
    """None (no rules: every invoker may do everything) or the checked rules; ValueError naming `where`."""
    if raw is None:
        return None
    if isinstance(raw, Rules):
        return raw
    if auth != "AWS_IAM":
        raise AccessRuleError(
            f"{where}: needs auth AWS_IAM: with auth {auth} the function is told no caller, so no rule could "
            "match; set auth to AWS_IAM or remove access"
        )
    return parse_rules(_plain(raw), where)


def _plain(raw: Any) -> Any:
    """Props given as tuples and mappings of any kind, as cdk.json's lists and objects."""
    if isinstance(raw, Mapping):
        return {principal: _plain(value) for principal, value in raw.items()}
    if isinstance(raw, tuple):
        return list(raw)
    return raw
