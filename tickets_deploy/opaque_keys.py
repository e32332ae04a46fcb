"""Where opaque ids' keys live outside the function: per service one SSM parameter (the same keys in every region, so
no two regions' ids meet), or a key file in the same format (tickets_admin encode and decode, the local server)."""

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


def opaque_keys_parameter(table_name: str) -> str:
    """The SSM parameter of a service's keys (a table name's characters are all allowed in its name)."""
    return f"/tickets/{table_name}/opaque-keys"


def key_versions_in_use(config: DeploymentConfig) -> set[int]:
    return {counter.opaque.key_version for counter in config.counters.values() if counter.opaque is not None}


def has_opaque_counters(config: DeploymentConfig) -> bool:
    return bool(key_versions_in_use(config))


def read_key_file(path: Path) -> dict[int, bytes]:
    try:
        return parse_keys(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise OpaqueKeyError(f"{path}: cannot be read ({err.strerror})") from None
    except OpaqueKeyError as err:
        raise OpaqueKeyError(f"{path}: {err}") from None


def new_key_file_text(versions: Iterable[int] = (1,)) -> str:
    keys = {str(version): base64.b64encode(secrets.token_bytes(NEW_KEY_BYTES)).decode() for version in versions}
    return json.dumps(keys, sort_keys=True) + "\n"
