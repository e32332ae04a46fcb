"""A reset as a mark, a file of one 8-byte counter mapped into the test kit and the server (`--reset-mark FILE`): one
round trip a test instead of two (bench/README.md). The standard library only: every pytest session imports it."""

from __future__ import annotations

import mmap
import tempfile
from pathlib import Path

_SIZE = 8  # one aligned store: a reader never sees half of it


class ResetMark:
    """The mapped counter: `bump()` (the test kit's reset), `moved()` and `seen()` (the server's), `close()`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        with open(self.path, "r+b") as file:  # the mapping outlives the file object
            self._map = mmap.mmap(file.fileno(), _SIZE)
        self._seen = self._map[:_SIZE]

    @classmethod
    def create(cls) -> ResetMark:
        with tempfile.NamedTemporaryFile(prefix="tickets-reset-mark-", delete=False) as file:
            file.write(bytes(_SIZE))
        return cls(file.name)

    def bump(self) -> None:
        self._map[:_SIZE] = ((int.from_bytes(self._map[:_SIZE], "little") + 1) % 2**64).to_bytes(_SIZE, "little")

    def moved(self) -> bytes | None:
        """The counter, if it moved since the value last `seen` (or since this mark was opened)."""
        now = self._map[:_SIZE]
        return now if now != self._seen else None

    def seen(self, value: bytes) -> None:
        """The reset `value` asked for is done (not before: a reset that failed is tried again)."""
        self._seen = value

    def close(self, *, remove: bool = False) -> None:
        self._map.close()
        if remove:
            self.path.unlink(missing_ok=True)
