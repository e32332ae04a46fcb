"""The keys of opaque ids outside the function: a key file, in the format tickets.opaque.parse_keys reads (a
JSON object of key version to base64 key), which tickets_admin's encode and decode read, and which the local
server is to read, or make at start when it is given none (new_key_file_text). A deployed function reads the
same format from its secret."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterable
from pathlib import Path

from tickets.opaque import OpaqueKeyError, parse_keys

NEW_KEY_BYTES = 32


def read_key_file(path: Path) -> dict[int, bytes]:
    """The keys in `path`, by version; OpaqueKeyError naming the file when it cannot be read or used."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise OpaqueKeyError(f"{path}: cannot be read ({err.strerror})") from None
    try:
        return parse_keys(text)
    except OpaqueKeyError as err:
        raise OpaqueKeyError(f"{path}: {err}") from None


def new_key_file_text(versions: Iterable[int] = (1,)) -> str:
    """A new key file: 32 bytes from the operating system's secure random source for each version."""
    keys = {str(version): base64.b64encode(secrets.token_bytes(NEW_KEY_BYTES)).decode() for version in versions}
    return json.dumps(keys, sort_keys=True) + "\n"
