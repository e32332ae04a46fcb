"""What the ledger records of fences (docs/explanation/epochs-and-fences.md): each key's layout changes
(KeyEpoch), and a fence begun and not yet recorded (PendingFence, of Changes), as the file writes them. Plain
data over tickets.epochs' arithmetic; what a config changes and whether that is safe is tickets_deploy.ledger's
epochs module."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tickets.epochs import Layout, epoch_start


@dataclass(frozen=True)
class KeyEpoch:
    """One layout change of one key, as the ledger records it."""

    key: str
    number: int  # 1, 2, ...: the key's items in this epoch are `key@number`
    fence: int  # above every ticket the old layout's lanes issued, in every region
    old: Layout  # the layout stopped at the fence, with the start its lanes had
    configured: Layout  # the new layout as cdk.json writes it (its start as configured)

    @property
    def start(self) -> int:
        """The new layout's effective start: its first ticket (lane 0's)."""
        return epoch_start(self.fence, self.configured.start, self.configured.stride)

    @property
    def new(self) -> Layout:
        return replace(self.configured, start=self.start)

    def to_json(self) -> dict[str, Any]:
        return {
            "epoch": self.number,
            "fence": self.fence,
            "from": _layout_json(self.old),
            "to": _layout_json(self.configured),
        }


@dataclass(frozen=True)
class Change:
    """A key whose layout the config changes: its lanes of `old` (items of epoch `number - 1`) stop at a fence."""

    key: str
    number: int
    old: Layout
    configured: Layout

    def epoch(self, fence: int) -> KeyEpoch:
        return KeyEpoch(self.key, self.number, fence, self.old, self.configured)

    def describe(self) -> str:
        return f"{self.key} to epoch {self.number} ({self.configured.describe()})"


@dataclass(frozen=True)
class PendingFence:
    """A fence `tickets_admin fence` began and has not recorded: written to the ledger before any lane is stopped,
    so every lane it stops (each records `id`) is known to this ledger, and so synthesis refuses every config until
    the fence is finished (recorded as epochs) or undone (docs/how-to/change-a-layout.md)."""

    id: str  # random hex: each lane it stops records it (tickets.lane_item.FENCED_BY)
    changes: tuple[Change, ...]

    def describe(self) -> str:
        return "; ".join(change.describe() for change in self.changes)

    def to_json(self) -> dict[str, Any]:
        keys = {
            change.key: {
                "epoch": change.number,
                "from": _layout_json(change.old),
                "to": _layout_json(change.configured),
            }
            for change in self.changes
        }
        return {"id": self.id, "keys": dict(sorted(keys.items()))}


def _layout_json(layout: Layout) -> dict[str, int]:
    return {"regionSlots": layout.region_slots, "shards": layout.shards, "start": layout.start, "stride": layout.stride}
