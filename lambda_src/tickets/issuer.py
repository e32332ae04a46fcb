"""Issuing tickets (plain: the store is handed in); an Issuer learns which lanes are exhausted, so a spent sharded key
costs one refusal and one read of its other lanes."""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .errors import BadRequest, Exhausted, NotFound, OpaqueCounter, Unavailable, echo, exhausted
from .keys import MAX_COUNT, echo_count
from .lane_item import LAST, STEP
from .messages import CounterState, LaneState
from .protocol import BLOCKS_ROUTE, Asked
from .sequence import Lane, lanes_of, tickets_left
from .settings import CounterConfig, Settings, unserved

if TYPE_CHECKING:
    from .opaque import OpaqueIds

NEAR_MAX_FRACTION = 0.9
_UNAVAILABLE_LANES_TRIED = 2  # a throttled shard gets one stand-in, not a storm of retries
_REMEMBERED_LANES = 100_000  # forgotten wholesale past this many: relearning costs a refusal and a read per key
# A lane's rate is its `last`'s change between two of this instance's requests at least this far apart.
RATE_WINDOW_SECONDS = 600
REPORT_SECONDS = 60


@functools.lru_cache(maxsize=1024)  # bounded: anyone may name new keys unless strictKeys is on
def _region_lanes(key: str, counter: CounterConfig, slot: int, slots: int) -> tuple[Lane, ...]:
    """A key's lanes, made once per warm function: frozen dataclasses are slow to build."""
    return tuple(lanes_of(key, counter, slot, slots))


class Store(Protocol):
    def advance(self, lane: Lane, count: int) -> int:
        """The new `last`; raises Exhausted only when the lane's `last` is above `lane.limit(count)`."""

    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]: ...


@dataclass(frozen=True)
class IssuedTickets:
    key: str
    first: int
    last: int
    step: int
    count: int
    counter: CounterConfig
    per_day: float | None = None  # the lane's tickets a day at its recent rate, when due (Issuer._per_day)

    @property
    def tickets_left(self) -> int:
        return tickets_left(self.counter.max, self.last, self.step)

    @property
    def days_left(self) -> float | None:
        per_day = self.per_day or 0.0  # a restored table can move `last` back: no meaningful rate then
        return self.tickets_left / per_day if per_day > 0 else None

    @property
    def tickets(self) -> list[int]:
        return list(range(self.first, self.last + 1, self.step))

    @property
    def near_max(self) -> bool:
        span = self.counter.max - self.counter.start
        return self.last - self.counter.start >= NEAR_MAX_FRACTION * span

    def answer(self, route: str, ids: OpaqueIds | None) -> dict[str, Any]:
        """Plain JSON, as an Idempotency-Key's record replays it (ids as answered, whatever key version comes later)."""
        if route == BLOCKS_ROUTE:
            return {"key": self.key, "first": self.first, "last": self.last, "step": self.step, "count": self.count}
        one, many = ("ticket", "tickets") if ids is None else ("id", "ids")
        values = self.tickets if ids is None else ids.encode_all(self.tickets)
        return {"key": self.key, one: values[0]} | ({many: values} if self.count > 1 else {})


@dataclass
class Issuer:
    settings: Settings
    store: Store
    shuffle: Callable[[list[Lane]], None] = random.shuffle
    config_name: str = "cdk.json"
    # item key -> a lower bound of the lane's stored `last`
    _last_at_least: dict[str, int] = field(default_factory=dict, init=False)
    # item key -> (since, last then, per day, reported): _per_day's
    _windows: dict[str, tuple[float, int, float | None, float]] = field(default_factory=dict, init=False)

    def issue(self, asked: Asked) -> IssuedTickets:
        counter, lanes = self._lanes(asked.key)
        self.shuffle(lanes)
        candidates = [lane for lane in lanes if self._may_fit(lane, asked.count)]
        failure: Exhausted | Unavailable | None = None
        unavailable = 0
        surveyed = len(lanes) == 1
        while candidates:
            lane = candidates.pop(0)
            try:
                last = self.store.advance(lane, asked.count)
            except Exhausted as err:
                self._learn(lane, lane.limit(asked.count) + 1)
                failure = failure if isinstance(failure, Unavailable) else err
                if not surveyed and candidates:
                    surveyed = True
                    self._survey(lanes)
                    candidates = [other for other in candidates if self._may_fit(other, asked.count)]
                continue
            except Unavailable as err:
                failure, unavailable = err, unavailable + 1
                if unavailable >= _UNAVAILABLE_LANES_TRIED:
                    break
                continue
            block = lane.block(last, asked.count)
            return IssuedTickets(
                asked.key, block.start, last, block.step, asked.count, counter, self._per_day(lane, last)
            )
        raise failure or exhausted(asked.key, asked.count, counter.max, lanes[0].step)

    def _per_day(self, lane: Lane, last: int) -> float | None:
        """Tickets a day over this instance's latest window (`last` counts every instance's), once a REPORT_SECONDS."""
        now = time.monotonic()
        since, then, per_day, reported = self._windows.get(lane.item_key) or (None, last, None, 0.0)
        if since is None or now - since >= RATE_WINDOW_SECONDS:
            if since is not None:
                per_day = (last - then) / lane.step * 86400 / (now - since)
            since, then = now, last
        elif now - reported < REPORT_SECONDS:
            return None
        if len(self._windows) >= _REMEMBERED_LANES:
            self._windows.clear()
        self._windows[lane.item_key] = (since, then, per_day, now)
        return per_day

    def _may_fit(self, lane: Lane, count: int) -> bool:
        return self._last_at_least.get(lane.item_key, lane.seed) <= lane.limit(count)

    def _learn(self, lane: Lane, last_at_least: int) -> None:
        if len(self._last_at_least) >= _REMEMBERED_LANES:
            self._last_at_least.clear()
        known = self._last_at_least.get(lane.item_key, last_at_least)
        self._last_at_least[lane.item_key] = max(known, last_at_least)

    def _survey(self, lanes: list[Lane]) -> None:
        with contextlib.suppress(Unavailable):  # unread: the lanes are tried one by one
            items = self.store.read(lanes)
            for lane in lanes:
                stored = items.get(lane.item_key)
                if stored is not None and stored[STEP] == lane.step and (last := stored[LAST]) is not None:
                    self._learn(lane, last)

    def check_block(self, key: str, count: int) -> None:
        counter = self.counter(key)
        if counter.opaque is not None:
            raise OpaqueCounter(
                f"{echo(key)} is an opaque counter: a range block would hand out tickets, and a caller cannot encode "
                f"them without the key. Take up to {MAX_COUNT} ids a request: GET /{key}?count=N"
            )
        limit = self.settings.block_limit(counter)
        if count > limit:
            raise BadRequest(
                f"invalid count {echo_count(count)}: a block of {echo(key)} holds at most {limit} tickets"
                f" (maxBlock in {self.config_name})"
            )

    def state(self, key: str) -> CounterState:
        counter, lanes = self._lanes(key)
        items = self.store.read(lanes)
        stored = [items.get(lane.item_key, {LAST: None, STEP: None}) for lane in lanes]  # unused lanes: last null
        if all(each[STEP] is None and each[LAST] is None for each in stored):
            raise NotFound(f"counter {key!r} has not issued a ticket in this region yet")
        rows: list[LaneState] = [
            {
                "counter": lane.item_key,
                "lane": lane.index,
                "first": lane.first,
                "step": lane.step if (step := each[STEP]) is None else step,
                "last": each[LAST] if each[LAST] != lane.seed else None,
            }
            for lane, each in zip(lanes, stored, strict=True)
        ]
        issued = [row["last"] for row in rows if row["last"] is not None]
        state: CounterState = {
            "key": key,
            "last": max(issued) if issued else None,
            # As stored: after a config change not the configured one.
            "step": next((step for each in stored if (step := each[STEP]) is not None), lanes[0].step),
            "config": counter.to_json(),
            "region": {"slot": self.settings.region_slot, "slots": self.settings.region_slots},
            "lanes": rows,
        }
        if counter.fence is not None:  # after a layout change (docs/explanation/epochs-and-fences.md)
            state["epoch"] = {"number": counter.epoch, "fence": counter.fence, "start": counter.start}
        return state

    def counter(self, key: str) -> CounterConfig:
        counter = self.settings.counter(key)
        if counter is None:
            raise NotFound(
                f"unknown key {key!r}: {unserved(key, self.config_name)}: only the keys in {self.config_name} (and "
                "the default key) are served"
            )
        return counter

    def _lanes(self, key: str) -> tuple[CounterConfig, list[Lane]]:
        counter = self.counter(key)
        return counter, list(_region_lanes(key, counter, self.settings.region_slot, self.settings.region_slots))
