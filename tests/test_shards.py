"""Hot-key shards and regions together (SPEC §2): every lane is its own item and sequence,
lanes never meet, a throttled or exhausted shard hands the request to another."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from botocore.exceptions import ClientError

from conftest import COUNTER_TABLE
from tickets.issuer import Issuer
from tickets.store import CounterStore

TWO_REGIONS = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {"hot": {"start": 1000, "stride": 3, "shards": 4}},
}
LANES = 2 * 4
STEP = 3 * LANES


def lane_of(ticket: int) -> int:
    return (ticket - 1000) // 3 % LANES


def issue_many(region, requests: int, rng: random.Random) -> list[list[int]]:
    blocks = []
    for _ in range(requests):
        answer = region.get("/hot", query={"count": str(rng.choice([1, 1, 2, 5]))})
        assert answer.status == 200, answer
        blocks.append(answer.body.get("tickets", [answer.body["ticket"]]))
    return blocks


def test_two_regions_of_four_shards_never_meet(deploy):
    rng = random.Random(4)
    east, west = deploy(TWO_REGIONS, "us-east-1"), deploy(TWO_REGIONS, "eu-west-1")
    issued = {"us-east-1": [], "eu-west-1": []}
    for region in (east, west, east, west):  # each region's function with its own table, turn about
        issued[region.region] += issue_many(region, 25, rng)

    everything = [t for blocks in issued.values() for block in blocks for t in block]
    assert len(everything) == len(set(everything)), "a ticket was issued twice"
    assert all(t >= 1000 and (t - 1000) % 3 == 0 for t in everything)
    by_lane = defaultdict(list)
    for region, blocks in issued.items():
        for block in blocks:
            assert {lane_of(t) for t in block} == {lane_of(block[0])}, "a block spans lanes"
            assert block == list(range(block[0], block[-1] + 1, STEP))
            by_lane[lane_of(block[0])] += block
        assert {lane_of(b[0]) for b in blocks} <= (set(range(4)) if region == "us-east-1" else set(range(4, 8)))
    assert set(by_lane) == set(range(LANES))  # a hundred requests reached every lane
    for lane, tickets in by_lane.items():  # in issue order: increasing, and with no failures, dense
        assert tickets == [1000 + 3 * lane + STEP * n for n in range(len(tickets))]

    for region in (east, west):
        state = region.get("/_counters/hot").body
        slot = region.config.regions[region.region]
        assert state["step"] == STEP and state["config"]["shards"] == 4
        assert state["region"] == {"slot": slot, "slots": 2}
        assert [(row["counter"], row["lane"], row["first"], row["step"]) for row in state["lanes"]] == \
            [(f"hot#{shard}", slot * 4 + shard, 1000 + 3 * (slot * 4 + shard), STEP) for shard in range(4)]
        assert [row["last"] for row in state["lanes"]] == [by_lane[row["lane"]][-1] for row in state["lanes"]]
        assert state["last"] == max(row["last"] for row in state["lanes"])


def test_two_single_lane_regions_are_together_dense(deploy):
    config = {"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    east, west = deploy(config, "us-east-1"), deploy(config, "eu-west-1")
    east_tickets = [east.get("/orders").body["ticket"] for _ in range(10)]
    west_tickets = [west.get("/orders").body["ticket"] for _ in range(10)]
    assert east_tickets == list(range(1, 21, 2)) and west_tickets == list(range(2, 21, 2))
    assert sorted(east_tickets + west_tickets) == list(range(1, 21))


LAYOUT_ITEM = {"counter": {"S": "hot"}, "shards": {"N": "4"}, "step": {"N": "4"}}


def sharded(deploy, **counter):
    return deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 4, **counter}}})


def throttle_items(monkeypatch, api, *item_keys: str) -> list[str]:
    """Make UpdateItem on these items fail as throttled; returns the item keys it was tried on."""
    tried, real_update = [], api.handler.dynamodb.update_item

    def update_item(**request):
        item_key = request["Key"]["counter"]["S"]
        tried.append(item_key)
        if item_key in item_keys:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "hot"}},
                              "UpdateItem")
        return real_update(**request)
    monkeypatch.setattr(api.handler.dynamodb, "update_item", update_item)
    return tried


def test_a_throttled_shard_hands_the_request_to_another(deploy, monkeypatch):
    api = sharded(deploy)
    tried = throttle_items(monkeypatch, api, "hot#2")
    throttled_first = Issuer(api.handler.settings, CounterStore(api.handler.dynamodb, COUNTER_TABLE),
                             shuffle=lambda lanes: lanes.sort(key=lambda lane: lane.shard != 2))
    monkeypatch.setattr(api.handler, "issuer", throttled_first)
    tickets = [api.get("/hot").body["ticket"] for _ in range(5)]
    assert tried == ["hot#2", "hot#0"] * 5
    assert tickets == [1, 5, 9, 13, 17]  # shard 0's lane


def test_with_random_picks_a_throttled_shard_costs_no_request(deploy, monkeypatch):
    api = sharded(deploy)
    tried = throttle_items(monkeypatch, api, "hot#2")
    answers = [api.get("/hot") for _ in range(30)]
    assert [a.status for a in answers] == [200] * 30
    assert all((a.body["ticket"] - 1) % 4 != 2 for a in answers)  # none from shard 2's lane
    assert len(tried) == 30 + tried.count("hot#2")  # each request: at most the throttled shard, then one


def test_when_every_shard_is_throttled_two_are_tried_then_503(deploy, monkeypatch):
    api = sharded(deploy)
    tried = throttle_items(monkeypatch, api, "hot#0", "hot#1", "hot#2", "hot#3")
    answer = api.get("/hot")
    assert answer.status == 503 and answer.body["error"] == "unavailable" and "Retry-After" in answer.headers
    assert len(tried) == 2 and len(set(tried)) == 2
    assert api.items() == []


def test_exhausted_shards_pass_the_request_on_until_all_are_spent(deploy):
    api = sharded(deploy, max=12)  # four lanes of three tickets: shard s has 1+s, 5+s, 9+s
    pairs = [api.get("/hot", query={"count": "2"}) for _ in range(5)]
    assert [a.status for a in pairs] == [200, 200, 200, 200, 409]  # a lane takes one pair, then refuses
    assert sorted(t for a in pairs[:4] for t in a.body["tickets"]) == list(range(1, 9))
    assert pairs[4].body["error"] == "exhausted"
    singles = sorted(api.get("/hot").body["ticket"] for _ in range(4))  # each lane still has one
    assert singles == [9, 10, 11, 12]
    before = api.items()
    assert before == [LAYOUT_ITEM] + [{"counter": {"S": f"hot#{s}"}, "last": {"N": str(9 + s)}, "step": {"N": "4"},
                                       "first": {"N": str(1 + s)}}
                                      for s in range(4)]
    answer = api.get("/hot")
    assert answer.status == 409 and answer.body["error"] == "exhausted"
    assert api.items() == before


def test_fewer_shards_later_is_refused(deploy):
    api = sharded(deploy)
    for _ in range(12):
        api.get("/hot")
    before = api.items()
    fewer = deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 2}}})
    for _ in range(4):
        answer = fewer.get("/hot")
        assert answer.status == 409 and answer.body["error"] == "config_mismatch"
    assert fewer.items() == before


@pytest.mark.parametrize("shards", [1, 3])
def test_item_keys_follow_the_shard_count(deploy, shards):
    api = sharded(deploy, shards=shards)
    for _ in range(30):
        api.get("/hot")
    items = {item["counter"]["S"]: item for item in api.items()}
    if shards == 1:
        assert set(items) == {"hot"} and "shards" not in items["hot"]
    else:  # one item per lane, and the plain key's item records the layout (no `last`: it issues nothing)
        assert set(items) == {"hot"} | {f"hot#{s}" for s in range(shards)}
        assert items["hot"] == {"counter": {"S": "hot"}, "step": {"N": str(shards)}, "shards": {"N": str(shards)}}


@pytest.mark.parametrize("before_shards, after_shards", [(1, 4), (2, 4), (4, 1), (4, 8)])
def test_a_changed_shard_count_is_refused_and_issues_nothing(deploy, before_shards, after_shards):
    """New shard items are other items than the old lanes: only the recorded layout can stop them
    from issuing the old lanes' numbers again."""
    old = sharded(deploy, shards=before_shards)
    issued = {old.get("/hot").body["ticket"] for _ in range(12)}
    before = old.items()
    new = sharded(deploy, shards=after_shards)
    for _ in range(3 * after_shards):  # enough random picks to try every new lane
        answer = new.get("/hot")
        assert answer.status == 409 and answer.body["error"] == "config_mismatch", answer
        assert "shards" in answer.body["message"] and "ticket" not in answer.body
    assert new.items() == before
    assert len(issued) == 12


def test_counters_shows_all_hundred_lanes_from_one_read(deploy, monkeypatch):
    api = sharded(deploy, shards=100)
    issued = {api.get("/hot").body["ticket"] for _ in range(5)}
    calls, real_batch_get = [], api.handler.dynamodb.batch_get_item

    def batch_get_item(**request):
        calls.append(len(request["RequestItems"][COUNTER_TABLE]["Keys"]))
        return real_batch_get(**request)
    monkeypatch.setattr(api.handler.dynamodb, "batch_get_item", batch_get_item)
    state = api.get("/_counters/hot").body
    assert calls == [100]
    assert len(state["lanes"]) == 100 and state["step"] == 100
    assert {lane["last"] for lane in state["lanes"] if lane["last"] is not None} == issued
