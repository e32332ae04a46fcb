"""A key version is what it was (docs/explanation/opaque-ids.md#a-key-is-what-it-was): the first use of an opaque
key version records its fingerprint in the counter table, and whoever holds another key for that version (a key file
lost and made again, an SSM parameter recreated) refuses to issue or decode with it: its ids would meet the ones
already issued (two keys' permutations of one domain share about one id in every M/n of n issued).

The fingerprint is HMAC-SHA256 of a fixed label under the key, its first 128 bits: it tells whether two keys are one
and nothing of the key. It lives in a reserved item (`_opaque-key#V`: tables.RESERVED_ITEM_PREFIX, which no key and
so no counter route can name), written once with `if_not_exists` by one UpdateItem per key version per process (the
function's role has UpdateItem and BatchGetItem on the table); tickets_admin and the local server read it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Any

from . import dynamodb_errors
from .errors import Unavailable
from .tables import COUNTER_KEY, RESERVED_ITEM_PREFIX

FINGERPRINT = "fingerprint"
_LABEL = b"tickets: the fingerprint of an opaque key version"
_HEX_DIGITS = 32
_UNAVAILABLE = dynamodb_errors.UnavailableMessages(
    throttled="the counter table is throttled; nothing was issued, retry after the Retry-After delay",
    no_answer="the counter table did not answer in time; nothing was issued, retry after the Retry-After delay",
)
HOW_TO = "docs/explanation/opaque-ids.md#a-key-is-what-it-was"


class KeyReplaced(Unavailable):
    """The key held for a version is not the one the table's ids of that version were made with: 503, nothing issued,
    until the operator restores the key (the metric OpaqueKeyReplaced, and its alarm, say so)."""


ITEM_PREFIX = f"{RESERVED_ITEM_PREFIX}opaque-key#"


def item_name(version: int) -> str:
    return f"{ITEM_PREFIX}{version}"


def recorded_versions(names: Iterable[str]) -> list[int]:
    """The key versions whose fingerprints items named `names` record."""
    return sorted(int(name.removeprefix(ITEM_PREFIX)) for name in names if name.startswith(ITEM_PREFIX))


def fingerprint(key: bytes) -> str:
    return hmac.new(key, _LABEL, hashlib.sha256).hexdigest()[:_HEX_DIGITS]


def recorded(item: dict[str, Any] | None) -> str | None:
    """The fingerprint a table's item records (None: no item, so no id of that version was made yet)."""
    value = (item or {}).get(FINGERPRINT)
    return value.get("S") if value else None


def replaced(version: int, key: bytes, item: dict[str, Any] | None, where: str) -> str | None:
    """Why `key` (from `where`) cannot serve `version`, whose item is `item` (None: it can, or nothing is recorded)."""
    stored = recorded(item)
    if stored is None or hmac.compare_digest(stored, fingerprint(key)):
        return None
    return (
        f"key version {version} in {where} is not the key this table's ids of key version {version} were made with "
        "(its fingerprint differs from the one recorded at that version's first use): its ids would repeat ones "
        f"already issued, so nothing is issued or decoded with it. Restore that version's key ({HOW_TO})"
    )


def record_request(version: int, key: bytes) -> dict[str, Any]:
    """UpdateItem's arguments (less the table) that record `key`'s fingerprint unless one is, and return the item."""
    return {
        "Key": {COUNTER_KEY: {"S": item_name(version)}},
        "UpdateExpression": "SET #f = if_not_exists(#f, :f)",
        "ExpressionAttributeNames": {"#f": FINGERPRINT},
        "ExpressionAttributeValues": {":f": {"S": fingerprint(key)}},
        "ReturnValues": "ALL_NEW",
    }


def check_key(client: Any, table: str, version: int, key: bytes, where: str) -> None:
    """Record the version's fingerprint on its first use, or raise KeyReplaced if another key's is recorded."""
    answer = dynamodb_errors.call(
        client, "update_item", {"TableName": table, **record_request(version, key)}, _UNAVAILABLE
    )
    problem = replaced(version, key, answer.get("Attributes"), where)
    if problem is not None:
        raise KeyReplaced(problem)
