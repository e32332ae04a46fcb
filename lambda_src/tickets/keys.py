"""What a counter key, a count and an idempotency key may look like."""

from __future__ import annotations

import json
import re
from typing import TypeGuard

from .errors import BadRequest, echo

MAX_KEY_CHARS = 100
KEY_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{MAX_KEY_CHARS - 1}}}")
KEY_RULE = f"1-{MAX_KEY_CHARS} characters from A-Z a-z 0-9 . _ : -, the first one a letter or digit"
MAX_COUNT = 1000  # tickets listed in one answer of /{key}
MAX_BLOCK = 1_000_000  # tickets in one range block of /_blocks/{key}, answered as first, last, step
MAX_IDEMPOTENCY_KEY_CHARS = 128
IDEMPOTENCY_KEY_PATTERN = re.compile(rf"[\x20-\x7e]{{1,{MAX_IDEMPOTENCY_KEY_CHARS}}}")


def is_valid_key(key: object) -> TypeGuard[str]:
    return isinstance(key, str) and KEY_PATTERN.fullmatch(key) is not None


def require_key(key: str) -> str:
    if not is_valid_key(key):
        raise BadRequest(f"invalid key {echo(key)}: a key is {KEY_RULE}")
    return key


def parse_count(raw: object, maximum: int = MAX_COUNT) -> int:
    count = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= len(str(maximum)):
        count = int(raw)
    if count is None or not 1 <= count <= maximum:
        raise BadRequest(f"invalid count {echo_count(raw)}: count is a whole number from 1 to {maximum}")
    return count


def echo_count(raw: object) -> str:
    return echo(raw if isinstance(raw, str) else json.dumps(raw, default=str))


def require_idempotency_key(value: str) -> str:
    if IDEMPOTENCY_KEY_PATTERN.fullmatch(value) is None:
        raise BadRequest("invalid Idempotency-Key header: use 1-128 printable ASCII characters")
    return value
