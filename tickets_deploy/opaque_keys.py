"""Where the keys of opaque ids live outside the function. A deployment's: one SSM SecureString parameter per
service, named after its table (opaque_keys_parameter), the same in every region, written by `python -m
tickets_admin put-key` and read by the function at cold start (tickets/opaque/secret.py). The construct only
names it and grants the read: CloudFormation cannot make a SecureString, and a value it generated per region
would give each region its own key, so two regions' ids could meet. A key file, in the same format
(tickets.opaque.parse_keys: a JSON object of key version to base64 key), which tickets_admin's encode and decode
read (--key-file) and the local server reads, or makes at start when it is given none (new_key_file_text)."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from tickets.opaque import OpaqueKeyError, parse_keys

if TYPE_CHECKING:
    from .schema import DeploymentConfig

NEW_KEY_BYTES = 32
PARAMETER_PREFIX = "/tickets/"


def opaque_keys_parameter(table_name: str) -> str:
    """The SSM parameter holding a service's keys: `/tickets/<tableName>/opaque-keys` (one per service, each region
    its own copy; a table name is letters, digits, `_`, `.` and `-`, all allowed in a parameter's name)."""
    return f"{PARAMETER_PREFIX}{table_name}/opaque-keys"


def key_versions_in_use(config: DeploymentConfig) -> set[int]:
    """The key versions the config's opaque counters encode with (their keyVersion): the keys it needs held."""
    return {counter.opaque.key_version for counter in config.counters.values() if counter.opaque is not None}


def has_opaque_counters(config: DeploymentConfig) -> bool:
    return bool(key_versions_in_use(config))


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
