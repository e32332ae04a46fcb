"""Issuing tickets: pick a lane of the key, advance it, and say what was issued.

Plain Python: the store is handed in, so this module knows nothing of DynamoDB.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Protocol

from .config import CounterConfig, Settings
from .errors import Exhausted, NotFound, Unavailable
from .sequence import Lane, lanes_of
from .tables import LAST, STEP

NEAR_MAX_FRACTION = 0.9
_UNAVAILABLE_LANES_TRIED = 2  # a throttled shard gets one stand-in, not a storm of retries


class Store(Protocol):
    def advance(self, lane: Lane, count: int) -> int: ...
    def read(self, lanes: list[Lane]) -> dict[str, dict[str, int | None]]: ...


@dataclass(frozen=True)
class Issued:
    key: str
    tickets: list[int]
    counter: CounterConfig

    @property
    def near_max(self) -> bool:
        """Past 90% of the range between start and max: time to raise max or plan a new key."""
        span = self.counter.max - self.counter.start
        return self.tickets[-1] - self.counter.start >= NEAR_MAX_FRACTION * span

    def to_json(self) -> dict:
        body: dict = {"key": self.key, "ticket": self.tickets[0]}
        if len(self.tickets) > 1:
            body["tickets"] = self.tickets
        return body


class Issuer:
    def __init__(self, settings: Settings, store: Store,
                 shuffle: Callable[[list[Lane]], None] = random.shuffle):
        self._settings = settings
        self._store = store
        self._shuffle = shuffle

    def issue(self, key: str, count: int) -> Issued:
        counter, lanes = self._lanes(key)
        self._shuffle(lanes)
        failure: Exhausted | Unavailable | None = None
        unavailable = 0
        for lane in lanes:
            try:
                last = self._store.advance(lane, count)
            except Exhausted as err:
                failure = failure if isinstance(failure, Unavailable) else err
                continue
            except Unavailable as err:
                failure, unavailable = err, unavailable + 1
                if unavailable >= _UNAVAILABLE_LANES_TRIED:
                    break
                continue
            return Issued(key=key, tickets=lane.block(last, count), counter=counter)
        assert failure is not None  # every key has at least one lane
        raise failure

    def state(self, key: str) -> dict:
        counter, lanes = self._lanes(key)
        rows, stored_steps = [], []
        items = self._store.read(lanes)
        for lane in lanes:  # every lane of this region, the unused ones with last null
            stored = items.get(lane.item_key, {LAST: None, STEP: None})
            if stored[STEP] is not None or stored[LAST] is not None:
                stored_steps.append(stored[STEP])
            last = stored[LAST]
            rows.append({
                "counter": lane.item_key, "lane": lane.index, "first": lane.first,
                "step": stored[STEP] if stored[STEP] is not None else lane.step,
                "last": last if last is not None and last != lane.seed else None,
            })
        if not stored_steps:
            raise NotFound(f"counter {key!r} has not issued a ticket in this region yet")
        issued = [row["last"] for row in rows if row["last"] is not None]
        return {
            "key": key,
            "last": max(issued) if issued else None,
            # As stored (after a config change it is not the configured one); a hand-made item has none yet.
            "step": next((step for step in stored_steps if step is not None), lanes[0].step),
            "config": counter.to_json(),
            "region": {"slot": self._settings.region_slot, "slots": self._settings.region_slots},
            "lanes": rows,
        }

    def _lanes(self, key: str) -> tuple[CounterConfig, list[Lane]]:
        counter = self._settings.counter(key)
        if counter is None:
            raise NotFound(f"unknown key {key!r}: strictKeys is on and only the keys in cdk.json "
                           "(and the default key) are served")
        return counter, lanes_of(key, counter, self._settings.region_slot, self._settings.region_slots)
