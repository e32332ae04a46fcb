"""Which tickets a lane owns: of L = regionSlots * shards lanes, lane l = slot * shards + shard owns
start + stride * (l + L * n), n = 0, 1, 2, ...: lanes interleave without ever meeting."""

from __future__ import annotations

from dataclasses import dataclass

from .epochs import Layout, item_base, item_key
from .settings import CounterConfig


@dataclass(frozen=True)
class Lane:
    key: str
    shard: int
    shards: int
    index: int
    first: int
    step: int
    max: int
    key_first: int  # shard 0's first ticket in this region: part of a sharded key's recorded layout
    stride: int
    epoch: int = 0  # after a layout change its items are named `key@epoch` (tickets.epochs)

    @property
    def item_key(self) -> str:
        return item_key(self.key, self.epoch, self.shards, self.shard)

    @property
    def plain_key(self) -> str:
        return item_base(self.key, self.epoch)

    @property
    def seed(self) -> int:
        return self.first - self.step

    def ticket(self, n: int) -> int:
        return self.first + self.step * n

    def owns(self, value: int) -> bool:
        return value >= self.first and (value - self.first) % self.step == 0

    def accepts_last(self, last: int) -> bool:
        return last == self.seed or self.owns(last)

    def block(self, last: int, count: int) -> range:
        """The `count` tickets that ended at `last`: a range, as cheap for a million tickets as for one."""
        return range(last - self.step * (count - 1), last + 1, self.step)

    def limit(self, count: int) -> int:
        return self.max - count * self.step


def tickets_left(maximum: int, last: int, step: int) -> int:
    return max(0, (maximum - last) // step)


def lanes_of(key: str, counter: CounterConfig, region_slot: int, region_slots: int) -> list[Lane]:
    layout = Layout(counter.start, counter.stride, counter.shards, region_slots)
    return [
        Lane(
            key=key,
            shard=shard,
            shards=counter.shards,
            index=layout.lane(region_slot, shard),
            first=layout.first(region_slot, shard),
            step=layout.step,
            max=counter.max,
            key_first=layout.first(region_slot, 0),
            stride=counter.stride,
            epoch=counter.epoch,
        )
        for shard in range(counter.shards)
    ]
