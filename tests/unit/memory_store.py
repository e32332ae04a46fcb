"""The issuer's `Store` protocol (tickets.issuer.Store) in memory: the counter table as a dict of lane items, with
the refusals the issuer sees from the real store (tickets.store.CounterStore), raised as the same TicketsErrors.

- advance: one conditional increment of the lane's item (created at the lane's seed if absent); refused, writing
  nothing, with Exhausted when the item's `last` is above `lane.limit(count)`, ConfigMismatch when the item holds
  another step, Unavailable when the lane is stopped at a fence (step STOPPED) or its item is throttled.
- read: every existing item's `last` and `step`, by item key; Unavailable when reads are throttled.
The calls are counted, so a test can say what a request cost."""

from __future__ import annotations

from dataclasses import dataclass, field

from tickets.epochs import STOPPED
from tickets.errors import ConfigMismatch, Unavailable, exhausted
from tickets.lane_item import LAST, STEP
from tickets.sequence import Lane


@dataclass
class MemoryStore:
    items: dict[str, dict[str, int]] = field(default_factory=dict)  # item key -> {last, step}
    throttled: set[str] = field(default_factory=set)  # item keys whose writes are throttled
    reads_throttled: bool = False
    writes: list[str] = field(default_factory=list)  # the item key of every advance, refused or not
    reads: list[list[str]] = field(default_factory=list)  # the item keys of every read

    def advance(self, lane: Lane, count: int) -> int:
        self.writes.append(lane.item_key)
        if lane.item_key in self.throttled:
            raise Unavailable(f"{lane.item_key} is throttled")
        item = self.items.get(lane.item_key, {LAST: lane.seed, STEP: lane.step})
        if item[STEP] == STOPPED:
            raise Unavailable(f"{lane.item_key} was stopped at a fence")
        if item[STEP] != lane.step:
            raise ConfigMismatch(f"{lane.item_key} has step {item[STEP]}, the config {lane.step}")
        if item[LAST] > lane.limit(count):
            raise exhausted(lane.key, count, lane.max, lane.step)
        self.items[lane.item_key] = {LAST: item[LAST] + count * lane.step, STEP: lane.step}
        return self.items[lane.item_key][LAST]

    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]:
        self.reads.append([lane.item_key for lane in lanes])
        if self.reads_throttled:
            raise Unavailable("the counter table is throttled")
        return {lane.item_key: dict(self.items[lane.item_key]) for lane in lanes if lane.item_key in self.items}

    def set_last(self, item_key: str, last: int, step: int) -> None:
        """An item as another function (or region's deploy, or an earlier request) left it."""
        self.items[item_key] = {LAST: last, STEP: step}
