"""Epochs: a key's layout changed on a live deployment, above a fence (docs/explanation/epochs-and-fences.md). Plain
arithmetic, shared by the service, tickets_admin's `fence`, the ledger and the models."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SHARD_SEPARATOR = "#"  # not allowed in keys, so `key#3` never names another counter
EPOCH_SEPARATOR = "@"  # nor this
STOPPED = 0  # a stopped lane's `step`: every version's condition asks for its configured step, always >= 1
FENCE_COMMAND = ".venv/bin/python -m tickets_admin fence"
FENCE_UNDO_COMMAND = f"{FENCE_COMMAND} --undo"


@dataclass(frozen=True)
class Layout:
    """Which numbers a key's lanes own: lane l's ticket n is start + stride * (l + lanes * n)."""

    start: int
    stride: int
    shards: int
    region_slots: int

    @property
    def lanes(self) -> int:
        return self.region_slots * self.shards

    @property
    def step(self) -> int:
        return self.stride * self.lanes

    def lane(self, slot: int, shard: int) -> int:
        return slot * self.shards + shard

    def first(self, slot: int, shard: int) -> int:
        return self.start + self.stride * self.lane(slot, shard)

    def owner(self, ticket: int) -> tuple[int, int] | None:
        offset = ticket - self.start
        if offset < 0 or offset % self.stride:
            return None
        lane = offset // self.stride % self.lanes
        return divmod(lane, self.shards)

    def describe(self) -> str:
        return f"start {self.start}, stride {self.stride}, shards {self.shards}, regionSlots {self.region_slots}"


def item_base(key: str, epoch: int) -> str:
    """A key's plain item in an epoch: the key itself in epoch 0, `key@epoch` after."""
    return key if epoch == 0 else f"{key}{EPOCH_SEPARATOR}{epoch}"


def key_and_epoch(item: str) -> tuple[str, int]:
    """item_key's inverse but for the shard (`orders@2#1`: orders, 2); a name typed in by hand is its own key."""
    base = item.partition(SHARD_SEPARATOR)[0]
    key, _, epoch = base.partition(EPOCH_SEPARATOR)
    return (key, int(epoch)) if epoch.isascii() and epoch.isdigit() else (base, 0)


def item_key(key: str, epoch: int, shards: int, shard: int) -> str:
    base = item_base(key, epoch)
    return base if shards == 1 else f"{base}{SHARD_SEPARATOR}{shard}"


def items_of(key: str, epoch: int, shards: int) -> list[str]:
    base = item_base(key, epoch)
    return [base] if shards == 1 else [base, *(item_key(key, epoch, shards, s) for s in range(shards))]


def fence_above(start: int, lasts: Iterable[int | None]) -> int:
    """Above every ticket of lanes whose final `last`s are `lasts` (None: nothing issued), and at least `start`."""
    issued = [last for last in lasts if last is not None]
    return max([start, *(last + 1 for last in issued)])


def epoch_start(fence: int, start: int, stride: int) -> int:
    """The new layout's start: the smallest number >= fence and >= start that is = start (mod stride)."""
    floor = max(fence, start)
    return floor + (start - floor) % stride
