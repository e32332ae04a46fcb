"""Hot-key shards and regions together (docs/explanation/design.md): every lane is its own item and sequence,
lanes never meet, a throttled or exhausted shard hands the request to another, a key's layout is
recorded before any shard's item is written, and a spent key costs a warm function almost nothing.

The function picks lanes at random; these tests pin the picks (`Picks`, or a seeded shuffle), so
every run tries the same lanes."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from moto_deployment import COUNTER_TABLE
from tickets.errors import ConfigMismatch, Unavailable
from tickets.issuer import Issuer
from tickets.protocol import Asked
from tickets.sequence import lanes_of
from tickets.settings import CounterConfig, Settings
from tickets.store import CounterStore

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)
MOTO_ONLY = {"test_a_new_shard_records_the_layout_first_then_creates_its_item"}  # botocore's transact_write_items

TWO_REGIONS = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {"hot": {"start": 1000, "stride": 3, "shards": 4}},
}
LANES = 2 * 4
CREATES_AN_ITEM = "attribute_not_exists(#counter)"  # the condition of creating a shard's item, and only that
STEP = 3 * LANES


def lane_of(ticket: int) -> int:
    return (ticket - 1000) // 3 % LANES


class Picks:
    """Lane picks for a test: each request tries shard `next` first, then the others in order."""

    def __init__(self, api, first: int = 0):
        self.next = first
        api.pick_lanes(self)

    def __call__(self, lanes: list) -> None:
        lanes.sort(key=lambda lane: (lane.shard != self.next, lane.shard))


def on_shards(api, shards, path: str = "/hot", **request: Any) -> list:
    """One request per shard named, each tried on that shard first."""
    picks = Picks(api)
    answers = []
    for shard in shards:
        picks.next = shard
        answers.append(api.get(path, **request))
    return answers


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
    east.pick_lanes(random.Random(5).shuffle)  # random-looking picks, the same on every run
    west.pick_lanes(random.Random(6).shuffle)
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
    assert set(by_lane) == set(range(LANES))  # these hundred requests reach every lane
    for lane, tickets in by_lane.items():  # in issue order: increasing, and with no failures, dense
        assert tickets == [1000 + 3 * lane + STEP * n for n in range(len(tickets))]

    for region in (east, west):
        state = region.get("/_counters/hot").body
        slot = region.config.regions[region.region]
        assert state["step"] == STEP and state["config"]["shards"] == 4
        assert state["region"] == {"slot": slot, "slots": 2}
        assert [(row["counter"], row["lane"], row["first"], row["step"]) for row in state["lanes"]] == [
            (f"hot#{shard}", slot * 4 + shard, 1000 + 3 * (slot * 4 + shard), STEP) for shard in range(4)
        ]
        assert [row["last"] for row in state["lanes"]] == [by_lane[row["lane"]][-1] for row in state["lanes"]]
        assert state["last"] == max(row["last"] for row in state["lanes"])


def test_two_single_lane_regions_are_together_dense(deploy):
    config = {"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    east, west = deploy(config, "us-east-1"), deploy(config, "eu-west-1")
    east_tickets = [east.get("/orders").body["ticket"] for _ in range(10)]
    west_tickets = [west.get("/orders").body["ticket"] for _ in range(10)]
    assert east_tickets == list(range(1, 21, 2)) and west_tickets == list(range(2, 21, 2))
    assert sorted(east_tickets + west_tickets) == list(range(1, 21))


LAYOUT_ITEM = {
    "counter": {"S": "hot"},
    "shards": {"N": "4"},
    "step": {"N": "4"},
    "first": {"N": "1"},
    "stride": {"N": "1"},
}


def sharded(deploy, **counter):
    return deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 4, **counter}}})


def throttle_items(monkeypatch, api, *item_keys: str) -> list[str]:
    """Make UpdateItem on these items fail as throttled; returns the item keys it was tried on."""
    tried, real_update = [], api.handler.dynamodb.update_item

    def update_item(**request):
        item_key = request["Key"]["counter"]["S"]
        tried.append(item_key)
        if item_key in item_keys:
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "hot"}}, "UpdateItem"
            )
        return real_update(**request)

    monkeypatch.setattr(api.handler.dynamodb, "update_item", update_item)
    return tried


def test_a_throttled_shard_hands_the_request_to_another(deploy, monkeypatch):
    api = sharded(deploy)
    assert [a.body["ticket"] for a in on_shards(api, range(4))] == [1, 2, 3, 4]  # every lane's item exists
    tried = throttle_items(monkeypatch, api, "hot#2")
    Picks(api, first=2)
    tickets = [api.get("/hot").body["ticket"] for _ in range(5)]
    assert tried == ["hot#2", "hot#0"] * 5
    assert tickets == [5, 9, 13, 17, 21]  # shard 0's lane


def test_with_random_picks_a_throttled_shard_costs_no_request(deploy, monkeypatch):
    api = sharded(deploy)
    on_shards(api, range(4))  # every lane's item exists
    api.pick_lanes(random.Random(30).shuffle)  # the assertions hold for every draw; this one is fixed
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
    api.pick_lanes(random.Random(12).shuffle)  # the outcome is the same for every draw
    pairs = [api.get("/hot", query={"count": "2"}) for _ in range(5)]
    assert [a.status for a in pairs] == [200, 200, 200, 200, 409]  # a lane takes one pair, then refuses
    assert sorted(t for a in pairs[:4] for t in a.body["tickets"]) == list(range(1, 9))
    assert pairs[4].body["error"] == "exhausted"
    singles = sorted(api.get("/hot").body["ticket"] for _ in range(4))  # each lane still has one
    assert singles == [9, 10, 11, 12]
    before = api.items()
    assert before == [LAYOUT_ITEM] + [
        {"counter": {"S": f"hot#{s}"}, "last": {"N": str(9 + s)}, "step": {"N": "4"}, "first": {"N": str(1 + s)}}
        for s in range(4)
    ]
    answer = api.get("/hot")
    assert answer.status == 409 and answer.body["error"] == "exhausted"
    assert api.items() == before


def test_fewer_shards_later_is_refused(deploy):
    api = sharded(deploy)
    on_shards(api, [0, 1, 2, 3] * 3)
    before = api.items()
    fewer = deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 2}}})
    for answer in on_shards(fewer, [0, 1, 0, 1]):
        assert answer.status == 409 and answer.body["error"] == "config_mismatch"
    assert fewer.items() == before


@pytest.mark.parametrize("shards", [1, 3])
def test_item_keys_follow_the_shard_count(deploy, shards):
    api = sharded(deploy, shards=shards)
    on_shards(api, list(range(shards)) * 2)
    items = {item["counter"]["S"]: item for item in api.items()}
    if shards == 1:
        assert set(items) == {"hot"} and "shards" not in items["hot"]
    else:  # one item per lane, and the plain key's item records the layout (no `last`: it issues nothing)
        assert set(items) == {"hot"} | {f"hot#{s}" for s in range(shards)}
        assert items["hot"] == {
            "counter": {"S": "hot"},
            "step": {"N": str(shards)},
            "shards": {"N": str(shards)},
            "first": {"N": "1"},
            "stride": {"N": "1"},
        }


@pytest.mark.parametrize("before_shards, after_shards", [(1, 4), (2, 4), (4, 1), (4, 8)])
def test_a_changed_shard_count_is_refused_and_issues_nothing(deploy, before_shards, after_shards):
    """New shard items are other items than the old lanes: only the recorded layout can stop them
    from issuing the old lanes' numbers again."""
    old = sharded(deploy, shards=before_shards)
    issued = {answer.body["ticket"] for answer in on_shards(old, [s % before_shards for s in range(12)])}
    before = old.items()
    new = sharded(deploy, shards=after_shards)
    for answer in on_shards(new, range(after_shards)):  # every new lane: old items and new ones
        assert answer.status == 409 and answer.body["error"] == "config_mismatch", answer
        assert "shards" in answer.body["message"] and "ticket" not in answer.body
    assert new.items() == before
    assert len(issued) == 12


def test_counters_shows_all_hundred_lanes_from_one_read(deploy, monkeypatch):
    api = sharded(deploy, shards=100)
    issued = {answer.body["ticket"] for answer in on_shards(api, [0, 17, 42, 63, 99])}  # five lanes
    assert issued == {1, 18, 43, 64, 100}
    calls, real_batch_get = [], api.handler.dynamodb.batch_get_item

    def batch_get_item(**request):
        calls.append(len(request["RequestItems"][COUNTER_TABLE]["Keys"]))
        return real_batch_get(**request)

    monkeypatch.setattr(api.handler.dynamodb, "batch_get_item", batch_get_item)
    state = api.get("/_counters/hot").body
    assert calls == [100]
    assert len(state["lanes"]) == 100 and state["step"] == 100
    assert {lane["last"] for lane in state["lanes"] if lane["last"] is not None} == issued


# --- items code did not write: refused, never completed from the running config ------------------


def shard_item(shard: int, last: int, **attributes: int) -> dict:
    return {
        "counter": {"S": f"hot#{shard}"},
        "last": {"N": str(last)},
        **{name: {"N": str(value)} for name, value in attributes.items()},
    }


@pytest.mark.parametrize(
    "unwritten",
    [
        shard_item(1, 6),  # on shard 1's lane 2, 6, 10, ..., but no step or first
        shard_item(1, 6, step=4),
        shard_item(1, 4),  # off the lane
        shard_item(1, -10, step=4),  # below the lane
        shard_item(1, 6, step=8),  # another step
    ],
    ids=["no-step", "step-no-first", "off-the-lane", "below-the-lane", "other-step"],
)
def test_a_shard_item_code_did_not_write_is_refused_and_nothing_is_written(deploy, unwritten):
    api = sharded(deploy)
    api.put_item(unwritten)
    for answer in on_shards(api, [1, 1, 1]):
        assert answer.status == 409 and answer.body["error"] == "config_mismatch", answer
        assert "ticket" not in answer.body
    assert api.items() == [unwritten]  # not even the key's layout


# A sharded key's plain item as version 0.1.0 wrote it: step and shards, no first and no stride.
LAYOUT_0_1_0 = {"counter": {"S": "hot"}, "shards": {"N": "4"}, "step": {"N": "4"}}


@pytest.mark.parametrize("start", [1, 2], ids=["same-start", "start-changed"])
def test_a_layout_without_first_or_stride_is_refused_not_completed_from_the_config(deploy, start):
    """Shard 0 issued 1, 5, 9 under 0.1.0 with start 1. Completed from a config with start 2, the
    layout would let shard 3 be created on 5, 9, 13, ...: tickets issued already."""
    api = sharded(deploy, start=start)
    legacy = [LAYOUT_0_1_0, shard_item(0, 9, step=4)]
    for item in legacy:
        api.put_item(item)
    for answer in on_shards(api, [3, 2, 1]):
        assert answer.status == 409 and answer.body["error"] == "config_mismatch", answer
        assert "lacks first and stride" in answer.body["message"]
        assert "`.venv/bin/python -m tickets_admin raise hot --above N`" in answer.body["message"]
    assert api.items() == legacy


# --- the layout, then the shard's item: no transactions -------------------------------------


def record_writes(monkeypatch, client) -> list[str]:
    """The item key of every UpdateItem the client sends (TransactWriteItems would fail the test)."""
    written, real_update = [], client.update_item

    def update_item(**request):
        written.append(request["Key"]["counter"]["S"])
        return real_update(**request)

    def no_transactions(**_):
        raise AssertionError("TransactWriteItems: not every DynamoDB-compatible endpoint has it")

    monkeypatch.setattr(client, "update_item", update_item)
    monkeypatch.setattr(client, "transact_write_items", no_transactions)
    return written


def test_a_new_shard_records_the_layout_first_then_creates_its_item(deploy, monkeypatch):
    api = sharded(deploy)
    Picks(api, first=3)
    written = record_writes(monkeypatch, api.handler.dynamodb)
    with api.dynamodb_calls() as calls:
        assert api.get("/hot").body["ticket"] == 4
        assert api.get("/hot").body["ticket"] == 8
    # The advance fails on the missing item (read to be sure), the layout, the shard's item; then one write.
    assert [operation for operation, _ in calls] == [
        "UpdateItem",
        "BatchGetItem",
        "UpdateItem",
        "UpdateItem",
        "UpdateItem",
    ]
    assert written == ["hot#3", "hot", "hot#3", "hot#3"]
    assert api.items() == [LAYOUT_ITEM, shard_item(3, 8, step=4, first=4)]


def test_a_crash_between_the_layout_and_the_shard_item_is_harmless(deploy, monkeypatch):
    api = sharded(deploy)
    Picks(api, first=2)
    real_update = api.handler.dynamodb.update_item

    def lost_before_the_shard_item(**request):
        if request.get("ConditionExpression") == CREATES_AN_ITEM:
            raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
        return real_update(**request)

    with monkeypatch.context() as crashing:
        crashing.setattr(api.handler.dynamodb, "update_item", lost_before_the_shard_item)
        assert api.get("/hot").status == 503
    assert api.items() == [LAYOUT_ITEM]  # a layout and no ticket
    assert api.get("/hot").body["ticket"] == 3  # the same layout goes on as if nothing happened
    other = deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 2}}})
    assert [a.body["error"] for a in on_shards(other, [0, 1])] == ["config_mismatch"] * 2


SETTINGS = {
    "4 shards": Settings(counters={"hot": CounterConfig(shards=4)}),
    "2 shards": Settings(counters={"hot": CounterConfig(shards=2)}),
    "4 shards, start 2": Settings(counters={"hot": CounterConfig(start=2, shards=4)}),
    "unsharded": Settings(counters={"hot": CounterConfig()}),
}


class Interleaved:
    """A client that, just before this request creates a shard's item (after it recorded the key's
    layout), lets another request run to completion: the worst moment for the two writes."""

    def __init__(self, client, meanwhile):
        self._client, self._meanwhile, self.ran = client, meanwhile, []

    def update_item(self, **request):
        if request.get("ConditionExpression") == CREATES_AN_ITEM and not self.ran:
            self.ran.append(self._meanwhile())
        return self._client.update_item(**request)

    def __getattr__(self, name):
        return getattr(self._client, name)


def issue_or_refusal(issuer: Issuer, count: int = 1) -> list[int] | str:
    try:
        return issuer.issue(Asked("hot", count)).tickets
    except ConfigMismatch as err:
        return err.code


@pytest.mark.parametrize(
    "other, expected",
    [
        ("4 shards", [3]),  # the same layout: it creates shard 2's item first, with ticket 3
        ("2 shards", "config_mismatch"),
        ("4 shards, start 2", "config_mismatch"),
        ("unsharded", "config_mismatch"),
    ],
)
def test_another_request_between_the_layout_and_the_shard_item_never_repeats_a_ticket(api, other, expected):
    table = COUNTER_TABLE
    meanwhile = Issuer(
        SETTINGS[other],
        CounterStore(api.client, table),
        shuffle=lambda lanes: lanes.sort(key=lambda lane: lane.shard != 2),
    )
    interleaved = Interleaved(api.client, lambda: issue_or_refusal(meanwhile))
    first = Issuer(
        SETTINGS["4 shards"],
        CounterStore(interleaved, table),
        shuffle=lambda lanes: lanes.sort(key=lambda lane: lane.shard != 2),
    )
    assert first.issue(Asked("hot", 2)).tickets == ([7, 11] if expected == [3] else [3, 7])
    assert interleaved.ran == [expected]
    # Whoever lost stays refused; the winner's layout goes on.
    assert issue_or_refusal(meanwhile) == ([15] if expected == [3] else "config_mismatch")


@pytest.mark.parametrize("first_to_write", ["unsharded", "2 shards"])
def test_the_first_layout_on_the_plain_item_wins_for_good(api, first_to_write):
    winner = Issuer(SETTINGS[first_to_write], CounterStore(api.client, COUNTER_TABLE))
    assert isinstance(issue_or_refusal(winner), list)
    loser = Issuer(SETTINGS["4 shards"], CounterStore(api.client, COUNTER_TABLE))
    before = api.items()
    assert [issue_or_refusal(loser) for _ in range(8)] == ["config_mismatch"] * 8
    assert api.items() == before


def test_a_changed_start_is_refused_on_a_shard_that_never_issued(deploy):
    """Shard 0 issued 1, 5, 9, ... With start 2, shard 3's lane would be 5, 9, ...: the same
    numbers, on an item that does not exist yet. The layout records shard 0's first ticket."""
    old = sharded(deploy)
    assert [a.body["ticket"] for a in on_shards(old, [0, 0])] == [1, 5]
    before = old.items()
    moved = sharded(deploy, start=2)
    answer = on_shards(moved, [3])[0]
    assert answer.status == 409 and answer.body["error"] == "config_mismatch", answer
    assert moved.items() == before


def test_a_stride_traded_for_region_slots_is_refused_on_a_shard_that_never_issued(deploy):
    """Stride 2 with one slot and stride 1 with two slots give three shards the same step (6) and
    shard 0 the same first ticket; but old shard 1's lane (3, 9, ...) is new shard 2's. The layout
    records the stride, so the new shard 2 item is never created."""
    old = deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "stride": 2, "shards": 3}}})
    assert [a.body["ticket"] for a in on_shards(old, [1, 1])] == [3, 9]
    before = old.items()
    traded = deploy(
        {"regions": {"us-east-1": 0}, "regionSlots": 2, "counters": {"hot": {"start": 1, "stride": 1, "shards": 3}}}
    )
    answer = on_shards(traded, [2])[0]
    assert answer.status == 409 and answer.body["error"] == "config_mismatch", answer
    assert traded.items() == before


# --- an endpoint without ReturnValuesOnConditionCheckFailure (dynalite, simulated on moto) ------


class WithoutFailedItems:
    """moto as dynalite answers: a failed condition comes back without the item, and there are no
    transactions. (tests/functional/test_engines.py runs against dynalite itself.)"""

    def __init__(self, client):
        self._client = client

    def update_item(self, **request):
        try:
            return self._client.update_item(**request)
        except ClientError as err:
            err.response.pop("Item", None)
            raise

    def transact_write_items(self, **_):
        raise ClientError({"Error": {"Code": "UnknownOperationException", "Message": "dynalite"}}, "TransactWriteItems")

    def __getattr__(self, name):
        return getattr(self._client, name)


@pytest.fixture
def dynalite_like(deploy, monkeypatch):
    def deploy_on(config: dict):
        api = deploy(config)
        store = CounterStore(WithoutFailedItems(api.handler.dynamodb), COUNTER_TABLE)
        api.pick_lanes(random.Random(1).shuffle)
        assert api.handler.issuer is not None  # the Issuer is made on activation: swap its store for the wrapped one
        monkeypatch.setattr(api.handler.issuer, "store", store)
        return api

    return deploy_on


def test_without_failed_items_every_refusal_is_still_a_409_and_writes_nothing(dynalite_like):
    api = dynalite_like(
        {
            "regions": {"us-east-1": 0},
            "counters": {"small": {"max": 3}, "hot": {"shards": 4, "max": 8}, "invoices": {"stride": 10}},
        }
    )
    assert [api.get("/small").body.get("ticket") for _ in range(3)] == [1, 2, 3]
    assert sorted(api.get("/hot").body["ticket"] for _ in range(8)) == list(range(1, 9))  # creates every shard
    off_the_lane = {"counter": {"S": "invoices"}, "last": {"N": "5"}, "step": {"N": "10"}}
    api.put_item(off_the_lane)
    before = api.items()
    for key, code in [("small", "exhausted"), ("hot", "exhausted"), ("invoices", "config_mismatch")] * 2:
        answer = api.get(f"/{key}")
        assert answer.status == 409 and answer.body["error"] == code, answer
    assert api.items() == before
    api.put_item({"counter": {"S": "invoices"}, "last": {"N": "21"}})  # on the lane, typed in by hand
    before = api.items()
    answer = api.get("/invoices")
    assert (
        answer.status == 409
        and "`.venv/bin/python -m tickets_admin raise invoices --above 21`" in answer.body["message"]
    )
    assert api.items() == before


# --- a spent sharded key costs a warm function almost nothing ---------------------------------


def spent(api, shards: int, maximum: int, room: dict[int, int] | None = None) -> None:
    """The items of `hot` once every lane issued all it may (shard s: `room[s]` tickets short)."""
    counter = CounterConfig(shards=shards, max=maximum)
    lanes = lanes_of("hot", counter, 0, 1)
    api.put_item(
        {"counter": {"S": "hot"}, "step": {"N": str(lanes[0].step)}, "shards": {"N": str(shards)}, "first": {"N": "1"}}
    )
    for lane in lanes:
        last = (
            lane.first + (maximum - lane.first) // lane.step * lane.step - (room or {}).get(lane.shard, 0) * lane.step
        )
        api.put_item(shard_item(lane.shard, last, step=lane.step, first=lane.first))


def writes_and_reads(calls: list) -> tuple[int, int]:
    return (
        sum(1 for operation, _ in calls if operation == "UpdateItem"),
        sum(1 for operation, _ in calls if operation == "BatchGetItem"),
    )


@pytest.mark.parametrize(
    "shards, maximum, count, cost",
    [
        (100, 200, 1, (1, 1)),  # the first refusal learns every lane; the others cost nothing
        (100, 500, 3, (1, 1)),
        (7, 50, 1, (1, 1)),
        (2, 1000, 400, (1, 1)),
        (100, 200, 3, (0, 0)),  # three never fit a lane of two tickets: refused without asking DynamoDB
    ],
)
def test_refusing_a_spent_sharded_key_costs_at_most_two_writes_on_average(deploy, shards, maximum, count, cost):
    api = sharded(deploy, shards=shards, max=maximum)
    api.pick_lanes(random.Random(shards).shuffle)
    spent(api, shards, maximum)
    before, refusals = api.items(), 20
    with api.dynamodb_calls() as calls:
        for _ in range(refusals):
            answer = api.get("/hot", query={"count": str(count)})
            assert answer.status == 409 and answer.body["error"] == "exhausted", answer
    writes, reads = writes_and_reads(calls)
    assert writes <= 2 * refusals and reads <= refusals, calls
    assert (writes, reads) == cost
    assert api.items() == before


def test_a_key_spent_through_the_api_is_refused_cheaply(deploy):
    api = sharded(deploy, shards=7, max=50)  # lanes 1..7 of 50 tickets: shard s has 1+s, 8+s, ... <= 50
    api.pick_lanes(random.Random(7).shuffle)
    issued = [api.get("/hot").body["ticket"] for _ in range(50)]
    assert sorted(issued) == list(range(1, 51))
    with api.dynamodb_calls() as calls:
        assert [api.get("/hot").body["error"] for _ in range(10)] == ["exhausted"] * 10
    writes, reads = writes_and_reads(calls)
    assert writes <= 2 * 10 and reads <= 10


@pytest.mark.parametrize("count, room", [(1, {57: 1}), (2, {3: 1, 57: 2, 80: 1})])
def test_a_lane_that_still_has_room_is_found_after_one_read(deploy, count, room):
    api = sharded(deploy, shards=100, max=200)
    spent(api, 100, 200, room)
    Picks(api, first=0)  # the spent lanes first: shard 0, 1, 2, ...
    with api.dynamodb_calls() as calls:
        answer = api.get("/hot", query={"count": str(count)})
    assert answer.status == 200, answer
    tickets = answer.body.get("tickets", [answer.body["ticket"]])
    assert [(t - 1) % 100 for t in tickets] == [57] * count  # shard 57's lane, the only one with room for count
    assert writes_and_reads(calls) == (2, 1)  # shard 0 refused, one read of every lane, shard 57 issued
    assert api.get("/hot", query={"count": str(count)}).body["error"] == "exhausted"
    assert api.get("/hot").status == (200 if count == 2 else 409)  # shards 3 and 80 still have one each


def test_a_cold_function_pays_one_write_and_one_read_to_learn(deploy):
    api = sharded(deploy, shards=100, max=200)
    spent(api, 100, 200)
    for _ in range(3):  # a new execution environment each time
        api.pick_lanes(random.Random(3).shuffle)
        with api.dynamodb_calls() as calls:
            assert api.get("/hot").body["error"] == "exhausted"
        assert writes_and_reads(calls) == (1, 1)


# --- throttled reads -------------------------------------------------------------------------------


class ThrottledReads:
    """The counter table, but BatchGetItem answers throttled `throttled` times, then leaves every key
    unprocessed `unprocessed` times, before it answers."""

    def __init__(self, client, throttled: int = 0, unprocessed: int = 0):
        self._client, self.throttled, self.unprocessed, self.reads = client, throttled, unprocessed, 0

    def batch_get_item(self, RequestItems):
        self.reads += 1
        if self.throttled:
            self.throttled -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}}, "x")
        if self.unprocessed:
            self.unprocessed -= 1
            return {"Responses": {}, "UnprocessedKeys": RequestItems}
        return self._client.batch_get_item(RequestItems=RequestItems)

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_a_throttled_survey_still_issues_from_a_shard_with_room(api):
    """Shard 0 is full; the survey that follows is throttled; shard 1 has room and must be used."""
    api.put_item(shard_item(0, 17, step=4, first=1))  # shard 0's lane 1, 5, ..., 17: full at max 20
    client = ThrottledReads(api.client, throttled=1)
    issuer = Issuer(
        Settings(counters={"hot": CounterConfig(start=1, shards=4, max=20)}),
        CounterStore(client, COUNTER_TABLE),
        shuffle=lambda lanes: lanes.sort(key=lambda lane: lane.shard),
    )
    assert issuer.issue(Asked("hot", 1)).tickets == [2]  # shard 1's first ticket
    assert client.reads == 2  # the survey, throttled, then the read that finds shard 1's item absent


def test_unprocessed_keys_are_asked_for_again_after_a_bounded_jittered_pause(api):
    api.put_item(shard_item(1, 6, step=4, first=2))
    lanes = lanes_of("hot", CounterConfig(start=1, shards=4), 0, 1)
    pauses: list[float] = []
    client = ThrottledReads(api.client, unprocessed=2)
    store = CounterStore(client, COUNTER_TABLE, sleep=pauses.append, jitter=lambda: 0.5)
    assert store.read(lanes) == {"hot#1": {"last": 6, "step": 4}}
    assert client.reads == 3 and pauses == [0.025, 0.05]  # half of 0.05 s, then half of 0.1 s

    pauses.clear()
    client.unprocessed = 3  # never answered within the attempts: 503, with no pause after the last
    store = CounterStore(client, COUNTER_TABLE, sleep=pauses.append, jitter=lambda: 1.0)
    with pytest.raises(Unavailable):
        store.read(lanes)
    assert pauses == [0.05, 0.1]
