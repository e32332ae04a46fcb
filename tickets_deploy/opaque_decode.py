"""Opaque ids decoded (`python -m tickets_admin decode`; the function only encodes): tickets/opaque/ids.py undone."""

from __future__ import annotations

from collections.abc import Mapping

from tickets.opaque import NOT_COMPUTED, OpaqueConfig, OpaqueIds, OpaqueKeyError, Rounds, round_mix, spread  # shared

_READS = str.maketrans("ILO", "110", "-")  # Crockford's decoding
_PYTHON_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"  # int(text, 32)'s digits


class OpaqueIdError(ValueError):
    """An id that is not one of this counter's."""


class OpaqueCodec(OpaqueIds):
    """One counter's ids under the given keys (key version -> key), both ways."""

    def __init__(self, config: OpaqueConfig, keys: Mapping[int, bytes], tweak: str):
        super().__init__(config, keys, tweak)
        self._to_python = str.maketrans(self._symbols, _PYTHON_DIGITS[: config.radix])

    def decode(self, text: str) -> tuple[int, int]:
        """The (ticket, key version) an id was made from."""
        given, config = text, self.config
        if config.alphabet == "base32":
            text = text.upper().translate(_READS)
        if len(text) != config.width:
            raise OpaqueIdError(f"{given!r} has {len(text)} characters: these ids have {config.width}")
        for position, symbol in enumerate(text, 1):
            if symbol not in self._symbols:
                raise OpaqueIdError(f"{given!r}: {symbol!r} (character {position}) is not one of {self._symbols}")
        value = int(text[: config.width - (config.check is not None)].translate(self._to_python), config.radix)
        if self._text(value) != text:  # the payload writes `value`: only the check character can differ
            raise OpaqueIdError(f"{given!r}: its check character is wrong (a character mistyped, or two swapped)")
        versions, size = config.key_versions, config.ids_per_version
        if value >= size * versions:
            raise OpaqueIdError(f"{given!r} is not an id these settings make (its value is above {versions} x {size})")
        x = value // versions
        version = (value - spread(x, versions)) % versions + 1
        rounds, b = self._version_rounds(version), self._b
        ticket = _backward(x, rounds, b)
        while ticket >= size:  # cycle-walking, backwards
            ticket = _backward(ticket, rounds, b)
        return ticket, version

    def _version_rounds(self, version: int) -> Rounds:
        if not 1 <= version <= self.config.key_versions:
            raise OpaqueKeyError(f"key version {version} is outside these ids' 1 .. {self.config.key_versions}")
        if version not in self._rounds:
            held = ", ".join(str(each) for each in sorted(self._rounds)) or "none"
            raise OpaqueKeyError(f"key version {version} is not among the keys given (they hold versions {held})")
        return self._rounds[version]


def _backward(value: int, rounds: Rounds, b: int) -> int:
    left, right = divmod(value, b)
    for copy, modulus, table in reversed(rounds):
        found = table[left] if table is not None else NOT_COMPUTED
        left, right = (
            (right - (round_mix(copy, modulus, table, left) if found == NOT_COMPUTED else found)) % modulus,
            left,
        )
    return left * b + right
