"""The rule of `counters.K.opaque`: its shape, and a domain (tickets.opaque) that holds every ticket 0 .. max."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickets.opaque import ALPHABETS, CHECKS, KEY_VERSIONS, OpaqueConfig
from tickets.settings import MAX_SAFE_INTEGER

from .rules import ConfigError, require_object, whole_number

# Digits: an id read as a number stays a JavaScript-safe integer. Base32: 100 bits, far above every ticket.
MAX_WIDTH = {"digits": 15, "base32": 20}
MIN_WIDTH = 2
MIN_IDS_PER_VERSION = 1_000_000
MAX_KEY_VERSIONS = 1000
EXAMPLE = '{"width": 10, "alphabet": "digits", "check": "luhn"}'
FIELDS = {"width", "alphabet", "check", "keyVersions", "keyVersion"}


def parse_opaque(value: Any, parsed: Mapping[str, Any], where: str) -> OpaqueConfig:
    opaque = opaque_settings(value, where)
    size, ids = opaque.ids_per_version, describe(opaque, key_version=False)
    if size < MIN_IDS_PER_VERSION:
        raise ConfigError(
            f"{where}: {ids} give {size:,} ids per key version, fewer than the {MIN_IDS_PER_VERSION:,} "
            f"NIST SP 800-38G asks of a format-preserving permutation (from enough ids of a small domain, and their "
            f"order, the permutation can be learned): {_widen(opaque, MIN_IDS_PER_VERSION - 1)}"
        )
    maximum = parsed["max"]
    if maximum >= size:
        max_where = where.rpartition(".")[0] + ".max"
        default = " (2^53-1, its default)" if maximum == MAX_SAFE_INTEGER else ""
        raise ConfigError(
            f"{where}: {ids} give each key version {size:,} ids, for tickets 0 to {size - 1:,}; "
            f"{max_where} is {maximum:,}{default}, and every ticket the counter can issue needs an id. "
            f"Lower {max_where} to {size - 1}, or {_widen(opaque, maximum)}"
        )
    return opaque


def opaque_settings(value: Any, where: str) -> OpaqueConfig:
    """The settings alone (the ledger reads its records with this)."""
    if isinstance(value, OpaqueConfig):  # the construct's prop
        value = value.to_json()
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be an object such as {EXAMPLE}, got {value!r}")
    require_object(value, where, FIELDS)
    alphabet = value.get("alphabet")
    if alphabet not in ALPHABETS:
        raise ConfigError(f"{where}.alphabet: must be one of {', '.join(ALPHABETS)}, got {alphabet!r}")
    check = value.get("check")
    if check is not None and check not in CHECKS:
        raise ConfigError(f"{where}.check: must be {' or '.join(CHECKS)} (a Luhn check character), or absent")
    width = value.get("width")
    widest = MAX_WIDTH[alphabet]
    why = " (an id read as a number stays a JavaScript-safe integer)" if alphabet == "digits" else ""
    if isinstance(width, int) and not isinstance(width, bool) and width > widest:
        raise ConfigError(f"{where}.width: at most {widest} for {alphabet}{why}, got {width}")
    width = whole_number(width, f"{where}.width", low=MIN_WIDTH, high=widest)
    versions = whole_number(
        value.get("keyVersions", KEY_VERSIONS), f"{where}.keyVersions", low=1, high=MAX_KEY_VERSIONS
    )
    version = value.get("keyVersion", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version > versions:
        raise ConfigError(
            f"{where}.keyVersion: {version} is above keyVersions ({versions}), the versions these ids leave room for"
        )
    return OpaqueConfig(
        width, alphabet, check, versions, whole_number(version, f"{where}.keyVersion", low=1, high=versions)
    )


def describe(opaque: OpaqueConfig, *, key_version: bool = True) -> str:
    """E.g. `10 digits with a Luhn check and 10 key versions (key version 1)`."""
    check = " with a Luhn check" if opaque.check else ", no check character,"
    version = f" (key version {opaque.key_version})" if key_version else ""
    return f"{_wide(opaque.width, opaque.alphabet)}{check} and {opaque.key_versions} key versions{version}"


def _wide(width: int, alphabet: str) -> str:
    return f"{width} digits" if alphabet == "digits" else f"{width} {alphabet} characters"


def _widen(opaque: OpaqueConfig, highest: int) -> str:
    """The narrowest id of the same alphabet (else base32) whose domain holds 0 .. highest."""
    for alphabet in dict.fromkeys((opaque.alphabet, "base32")):
        for width in range(MIN_WIDTH, MAX_WIDTH[alphabet] + 1):
            wider = OpaqueConfig(width, alphabet, opaque.check, opaque.key_versions)
            if wider.ids_per_version > highest:
                return f"make the ids {_wide(width, alphabet)} ({wider.ids_per_version:,} ids per key version)."
    raise AssertionError("base32's widest ids hold every ticket (2^63-1) under 1000 key versions")
