"""The issuer's `Store` protocol (tickets.issuer.Store) in memory, for the issuer's unit tests: the counter table as a
dict of lane items, with the refusals the issuer sees from the real store (tickets.store.CounterStore), raised as the
same TicketsErrors (tests/functional/test_memory_store.py holds the two to the same answers).

- advance: one conditional increment of the lane's item (created at the lane's seed if absent); refused, writing
  nothing, with Exhausted when the item's `last` is above `lane.limit(count)`, ConfigMismatch when the item holds
  another step or first ticket, Unavailable when the lane is stopped at a fence (step STOPPED) or its item is
  throttled (`throttled`, which the real store answers for DynamoDB's throttling).
- read: every existing item's `last` and `step`, by item key; Unavailable when reads are throttled.
A sharded key's layout record (its plain item) is not kept: tests/functional/test_shards.py covers it on the real
store. The calls are counted, so a test can say what a request cost."""

from __future__ import annotations

from dataclasses import dataclass, field

from tickets.epochs import STOPPED
from tickets.errors import ConfigMismatch, Unavailable, exhausted
from tickets.lane_item import FIRST, LAST, STEP
from tickets.sequence import Lane


@dataclass
class MemoryStore:
    items: dict[str, dict[str, int]] = field(default_factory=dict)  # item key -> {last, step, first}
    throttled: set[str] = field(default_factory=set)  # item keys whose writes are throttled
    reads_throttled: bool = False
    writes: list[str] = field(default_factory=list)  # the item key of every advance, refused or not
    reads: list[list[str]] = field(default_factory=list)  # the item keys of every read

    def advance(self, lane: Lane, count: int) -> int:
        self.writes.append(lane.item_key)
        if lane.item_key in self.throttled:
            raise Unavailable(f"{lane.item_key} is throttled")
        item = self.items.get(lane.item_key, {LAST: lane.seed, STEP: lane.step, FIRST: lane.first})
        if item[STEP] == STOPPED:
            raise Unavailable(f"{lane.item_key} was stopped at a fence")
        if (item[STEP], item.get(FIRST, lane.first)) != (lane.step, lane.first):
            raise ConfigMismatch(f"{lane.item_key} holds step {item[STEP]}, first {item.get(FIRST)}")
        if item[LAST] > lane.limit(count):
            raise exhausted(lane.key, count, lane.max, lane.step)
        self.items[lane.item_key] = {**item, LAST: item[LAST] + count * lane.step}
        return self.items[lane.item_key][LAST]

    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]:
        self.reads.append([lane.item_key for lane in lanes])
        if self.reads_throttled:
            raise Unavailable("the counter table is throttled")
        stored = {lane.item_key: self.items.get(lane.item_key) for lane in lanes}
        return {key: {LAST: item[LAST], STEP: item[STEP]} for key, item in stored.items() if item is not None}

    def set_last(self, item_key: str, last: int, step: int) -> None:
        """An item as another function, region or fence left it (its first ticket unrecorded: any lane's)."""
        self.items[item_key] = {LAST: last, STEP: step}
