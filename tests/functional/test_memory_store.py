"""The in-memory Store of the issuer's unit tests (tests/memory_store.py) against the real one (tickets.store, on moto
and on the memory backend): the same advances and reads, the same answers and refusals."""

from __future__ import annotations

from typing import Any

import pytest

from memory_store import MemoryStore
from moto_deployment import COUNTER_TABLE
from tickets import lane_item
from tickets.epochs import STOPPED
from tickets.errors import Exhausted, TicketsError
from tickets.issuer import Store
from tickets.sequence import Lane, lanes_of
from tickets.settings import CounterConfig
from tickets.store import CounterStore
from tickets.tables import COUNTER_KEY

EVERY_BACKEND = True  # the real store on moto and on the memory backend (conftest.py)

# Steps: (shard, count) advances that shard's lane; "read" reads every lane; ("stop", shard) stops a lane at a fence;
# (shard, count, config) advances a lane of another config, as a function deployed with it would. Last, the refusals.
SCENARIOS: dict[str, tuple[dict[str, Any], list[Any], list[str]]] = {
    "one lane": ({}, [(0, 1), (0, 3), "read"], []),
    "up to max": ({"max": 5}, [(0, 4), (0, 2), (0, 1), (0, 1), "read"], ["exhausted"] * 2),
    "a block past max on a new lane": ({"max": 3}, [(0, 5), "read"], ["exhausted"]),
    "shards": ({"shards": 3, "max": 10}, [(1, 1), "read", (1, 2), (0, 1), (1, 1), (2, 3), "read"], ["exhausted"]),
    "a stopped lane": ({"shards": 2}, [(0, 1), ("stop", 0), (0, 1), (1, 1), "read"], ["unavailable"]),
    "another step": ({}, [(0, 2), (0, 1, {"stride": 2}), "read"], ["config_mismatch"]),
    "another first ticket": ({"stride": 2}, [(0, 2), (0, 1, {"stride": 2, "start": 3}), "read"], ["config_mismatch"]),
    "a start of 10": ({"start": 10}, [(0, 1), "read"], []),
}


def lanes(config: dict[str, Any]) -> list[Lane]:
    return lanes_of("k", CounterConfig(**config), 0, 1)


def outcome(step: Any, store: Store, config: dict[str, Any], stop: Any) -> Any:
    try:
        if step == "read":
            return store.read(lanes(config))
        if step[0] == "stop":
            return stop(lanes(config)[step[1]])
        shard, count, *other = step
        return store.advance(lanes({**config, **(other[0] if other else {})})[shard], count)
    except TicketsError as err:  # an Exhausted's message is the caller's 409: the same word for word
        return err.code, err.message if isinstance(err, Exhausted) else type(err).__name__


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_memory_store_answers_as_the_real_one(api, scenario):
    config, steps, refusals = SCENARIOS[scenario]
    memory = MemoryStore()

    def stop_real(lane: Lane) -> None:
        api.client.update_item(TableName=COUNTER_TABLE, Key={COUNTER_KEY: {"S": lane.item_key}}, **lane_item.stop("f"))

    def stop_memory(lane: Lane) -> None:
        memory.items[lane.item_key][lane_item.STEP] = STOPPED

    real = [outcome(step, CounterStore(api.client, COUNTER_TABLE), config, stop_real) for step in steps]
    assert [outcome(step, memory, config, stop_memory) for step in steps] == real
    assert [each[0] for each in real if isinstance(each, tuple)] == refusals
