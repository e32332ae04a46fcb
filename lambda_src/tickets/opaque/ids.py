"""Opaque ids (docs/explanation/opaque-ids.md): a Feistel network over [0, a*b), FF1's 10 rounds of keyed BLAKE2b,
cycle-walking to M ids; a half below TABLE_HALVES keeps its rounds in a 16-bit array (bench/README.md)."""

from __future__ import annotations

import array
import base64
import binascii
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from hashlib import blake2b
from math import isqrt
from typing import Any

from ..config_json import ALWAYS, ConfigJson

ALPHABETS = {"digits": "0123456789", "base32": "0123456789ABCDEFGHJKMNPQRSTVWXYZ"}  # Crockford's base32
CHECKS = ("luhn",)  # Luhn mod R: mod 10 for digits, mod 32 for base32 (the check stays in the alphabet)
KEY_VERSIONS = 10  # the default V; like every default here, never to change (ids were made with it)
ROUNDS = 10  # FF1's
# The widest half whose rounds keep a table of 2-byte entries (2**16 - 1: not computed yet): at most 1.3 MB a version.
TABLE_HALVES = 2**16 - 1
NOT_COMPUTED = 2**16 - 1
KEY_BYTES = (16, 64)  # a version's key: BLAKE2b takes up to 64 bytes; 16 is the least we accept
KEY_FORMAT = f'{{"1": "<base64 of {KEY_BYTES[0]} to {KEY_BYTES[1]} random bytes>", "2": ...}}, one key per version'


class OpaqueKeyError(ValueError): ...


@dataclass(frozen=True)
class OpaqueConfig(ConfigJson):
    """A counter's opaque settings (cdk.json's `counters.K.opaque`): all but key_version are permanent."""

    width: int  # characters, the check character included
    alphabet: str  # a name in ALPHABETS
    check: str | None = None  # a name in CHECKS, or None
    key_versions: int = field(default=KEY_VERSIONS, metadata=ALWAYS)  # V, each of M ids
    key_version: int = field(default=1, metadata=ALWAYS)  # the one new tickets are encoded with; rotation raises it

    @property
    def radix(self) -> int:
        return len(ALPHABETS[self.alphabet])

    @property
    def ids_per_version(self) -> int:
        return int(self.radix ** (self.width - (self.check is not None))) // self.key_versions


# A round: a copy of its keyed BLAKE2b, the modulus of the half it adds to (a, b, a, ...) and its table or None.
_Round = tuple[Callable[[], Any], int, "array.array[int] | None"]
Rounds = tuple[_Round, ...]


class OpaqueIds:
    """One counter's ids under the given keys (version -> key); decoding is tickets_deploy.opaque_decode's."""

    def __init__(self, config: OpaqueConfig, keys: Mapping[int, bytes], tweak: str):
        self.config = config
        radix = config.radix
        self._symbols = ALPHABETS[config.alphabet]
        self._pairs, self._pair_radix, self._radix = _pairs(config.alphabet), radix * radix, radix
        self._check = config.check is not None
        self._payload = config.width - (config.check is not None)
        self._pair_steps, self._odd = range((self._payload + 1) // 2), self._payload % 2
        self._size = config.ids_per_version
        if not 1 <= self._size <= 2**100:  # so that each half is below 2**64: 8 bytes
            raise ValueError(f"{config}: holds {self._size} ids per key version (1 .. 2**100)")
        a = isqrt(self._size - 1) + 1
        self._b = -(-self._size // a)
        self._rounds: dict[int, Rounds] = {
            version: tuple(
                (
                    _round_state(key, config, tweak, version, i).copy,
                    (a, self._b)[i % 2],
                    array.array("H", [NOT_COMPUTED]) * a if a <= TABLE_HALVES else None,  # a half is below a (b <= a)
                )
                for i in range(ROUNDS)
            )
            for version, key in keys.items()
            if 1 <= version <= config.key_versions
        }

    def encode(self, ticket: int, version: int | None = None) -> str:
        return self.encode_all((ticket,), version)[0]

    def encode_all(self, tickets: Iterable[int], version: int | None = None) -> list[str]:
        version = self.config.key_version if version is None else version
        rounds, b, size, versions = self._version_rounds(version), self._b, self._size, self.config.key_versions
        made = []
        for ticket in tickets:
            if not 0 <= ticket < size:
                raise ValueError(f"ticket {ticket} is outside this domain's 0 .. {size - 1}")
            x = _forward(ticket, rounds, b)
            while x >= size:  # cycle-walking: the network maps [0, a*b) onto itself, and leaves [M, a*b)
                x = _forward(x, rounds, b)
            made.append(self._text(x * versions + (version - 1 + spread(x, versions)) % versions))
        return made

    def _text(self, value: int) -> str:
        # Two characters a step from the right (_pairs); an odd payload's extra leading 0 adds nothing to Luhn's sum.
        pairs, pair_radix = self._pairs, self._pair_radix
        pieces, total = [], 0
        for _ in self._pair_steps:
            value, pair = divmod(value, pair_radix)
            piece, part = pairs[pair]
            pieces.append(piece)
            total += part
        pieces.reverse()
        text = "".join(pieces)[self._odd :]
        return text + self._symbols[-total % self._radix] if self._check else text

    def _version_rounds(self, version: int) -> Rounds:
        return self._rounds[version]


@functools.cache
def _pairs(alphabet: str) -> list[tuple[str, int]]:
    """Each pair of codes at index high * R + low: its two characters, and its part of Luhn's sum (low doubled)."""
    symbols = ALPHABETS[alphabet]
    radix = len(symbols)
    doubled = [2 * code // radix + 2 * code % radix for code in range(radix)]  # Luhn's doubling
    return [(symbols[high] + symbols[low], high + doubled[low]) for high in range(radix) for low in range(radix)]


def spread(x: int, versions: int) -> int:
    """A public hash of x onto [0, V) (Knuth's multiplicative hashing): unlike x % V, no character repeats another."""
    return (x * 0x9E3779B97F4A7C15 % 2**64) * versions >> 64


def _forward(value: int, rounds: Rounds, b: int) -> int:
    left, right = divmod(value, b)  # left in [0, a), right in [0, b); after an even number of rounds, again
    for copy, modulus, table in rounds:
        mixed = table[right] if table is not None else NOT_COMPUTED  # inline: most ids find it there
        left, right = (
            right,
            (left + (round_mix(copy, modulus, table, right) if mixed == NOT_COMPUTED else mixed)) % modulus,
        )
    return left * b + right


def round_mix(copy: Callable[[], Any], modulus: int, table: array.array[int] | None, half: int) -> int:
    """The round's keyed BLAKE2b of `half` modulo `modulus` (a bias below 2**-78), kept in its table if any."""
    mixing = copy()
    mixing.update(half.to_bytes(8, "big"))
    mixed = int.from_bytes(mixing.digest(), "big") % modulus
    if table is not None:
        table[half] = mixed
    return mixed


def _round_state(key: bytes, config: OpaqueConfig, tweak: str, version: int, round_number: int) -> Any:
    """Keyed with the version's key, having read all but the current key_version, which changes."""
    domain = f"{round_number}/{config.alphabet}/{config.width}/{config.check}/{config.key_versions}/{version}/{tweak}/"
    return blake2b(domain.encode(), key=key, digest_size=16, person=b"tickets.opaque")


def parse_keys(text: str) -> dict[int, bytes]:
    """A key file's (or the secret's) text: {"1": "<base64 of 16 to 64 random bytes>", ...}."""
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or not raw:
        raise OpaqueKeyError('keys: not a JSON object of key versions to base64 keys, e.g. {"1": "<44 characters>"}')
    keys = {}
    for version, encoded in raw.items():
        try:
            key = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else b""
        except binascii.Error:
            key = b""
        canonical = version.isascii() and version.isdigit() and str(int(version)) == version != "0"
        if not canonical or not KEY_BYTES[0] <= len(key) <= KEY_BYTES[1]:
            raise OpaqueKeyError(
                f"keys: {version!r} must be a key version (1, 2, ...) and its key {KEY_BYTES[0]} to {KEY_BYTES[1]} "
                "bytes in base64"
            )
        keys[int(version)] = key
    return keys
