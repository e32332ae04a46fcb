"""The keys of opaque ids (docs/how-to/opaque-order-numbers.md) from SSM, each version's fingerprint recorded on first
use (another key answers 503, errors.KeyReplaced); `unlogged` drops botocore's DEBUG lines, which print bodies."""

from __future__ import annotations

import contextlib
import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..access.store import StoredValue, ssm_client
from ..errors import Unavailable
from .ids import KEY_FORMAT, OpaqueKeyError, parse_keys

HOW_TO = "docs/how-to/opaque-order-numbers.md"


def fingerprint(key: bytes) -> str:
    return hmac.new(key, b"tickets key fingerprint", "sha256").hexdigest()[:32]


def replaced(version: int, key: bytes, item: Mapping[str, Any] | None, where: str) -> str | None:
    """Why `key` (from `where`) cannot serve `version`, whose fingerprint item is `item` (None: it can)."""
    stored = (item or {}).get("fingerprint", {}).get("S")
    if stored is None or hmac.compare_digest(stored, fingerprint(key)):
        return None
    return f"key version {version} in {where} is not the key its first ids were made with: restore it"


def read_secret(name: str, ssm: Any = None) -> str:
    with unlogged():
        value: str = (ssm or ssm_client()).get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
    return value


def parameter_keys(name: str, ssm: Any = None, pause: Callable[[float], None] = time.sleep) -> StoredKeys:
    return StoredKeys(lambda: read_secret(name, ssm), f"the SSM parameter {name}", pause=pause).read_at_cold_start()


_inside = threading.local()  # depth: how many `unlogged` blocks this thread is in
for _name in ("botocore.endpoint", "botocore.parsers"):  # their DEBUG lines print bodies
    logging.getLogger(_name).addFilter(lambda record: not getattr(_inside, "depth", 0))


@contextlib.contextmanager
def unlogged() -> Iterator[None]:
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        yield
    finally:
        _inside.depth -= 1


class StoredKeys(StoredValue[Mapping[int, bytes]]):
    """The keys (version -> key); read again when short of the version asked for."""

    def __init__(self, read: Callable[[], str], where: str, **timing: Any):  # timing: StoredValue's clock and pause
        super().__init__(**timing)
        self._read_text, self.where = read, where

    def keys(self, version: int) -> Mapping[int, bytes]:
        keys = self._current(short=version not in (self._value or {}))
        if keys is None:
            raise Unavailable(
                f"this function cannot read the keys of its opaque ids ({self._why}); nothing was issued. "
                f"The operator puts them in {self.where}: .venv/bin/python -m tickets_admin put-key ({HOW_TO})"
            )
        if version not in keys:
            held = ", ".join(map(str, sorted(keys)))
            raise Unavailable(
                f"the keys of opaque ids in {self.where} hold key versions {held}, not {version}, which this counter "
                f"encodes with; nothing was issued. Add it: .venv/bin/python -m tickets_admin put-key ({HOW_TO})"
            )
        return keys

    def held(self) -> list[int] | None:
        if self._tried_at is None:
            self.try_read()
        return sorted(self._value) if self._value is not None else None

    def _read(self) -> Mapping[int, bytes]:
        return parse_keys(self._read_text())

    def _cause(self, err: Exception) -> str:
        if isinstance(err, OpaqueKeyError):  # its message may quote a key
            return f"its value is not a JSON object of key versions to base64 keys: {KEY_FORMAT}"
        return super()._cause(err)
