"""The issuer (tickets.issuer) on an in-memory store (memory_store.py): which lane a request goes to, shards, the
survey of a key's lanes, exhaustion, and what a warm function learns between requests
(docs/explanation/design.md#lanes). The real store's conditions are tests/functional/test_shards.py's."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

import tickets.issuer
from memory_store import MemoryStore
from tickets.epochs import STOPPED
from tickets.errors import BadRequest, ConfigMismatch, Exhausted, NotFound, TicketsError, Unavailable
from tickets.issuer import Issuer
from tickets.protocol import Asked
from tickets.settings import CounterConfig, Settings

HOT = [f"hot#{shard}" for shard in range(4)]


def in_order(lanes: list) -> None:
    """A shuffle that leaves the lanes as they are: shard 0 first."""


def issuer_of(store: MemoryStore, shuffle=in_order, **counter) -> Issuer:
    """An issuer of the key `hot` (4 shards unless `counter` says otherwise) on `store`."""
    return Issuer(Settings(counters={"hot": CounterConfig(**{"shards": 4, **counter})}), store, shuffle)


def refusal(issuer: Issuer, key: str = "hot", count: int = 1) -> TicketsError:
    with pytest.raises(TicketsError) as raised:
        issuer.issue(Asked(key, count))
    return raised.value


# --- lane choice ---------------------------------------------------------------------------------------------------


def test_an_unsharded_key_issues_from_its_one_item_in_order():
    store = MemoryStore()
    issuer = Issuer(Settings(), store)
    assert [issuer.issue(Asked("orders", count)).tickets for count in (1, 3)] == [[1], [2, 3, 4]]
    assert store.items == {"orders": {"last": 4, "step": 1, "first": 1}}
    assert (store.writes, store.reads) == (["orders"] * 2, [])


def test_the_region_slot_picks_the_lane():
    counters = {"k": CounterConfig(start=100, stride=10)}
    store = MemoryStore()
    issuer = Issuer(Settings(region_slot=1, region_slots=3, counters=counters), store)
    issued = issuer.issue(Asked("k", 2))
    assert (issued.tickets, issued.step, store.writes) == ([110, 140], 30, ["k"])


@pytest.mark.parametrize("shuffle, item, ticket", [(in_order, "hot#0", 1), (list.reverse, "hot#3", 4)])
def test_a_sharded_key_takes_the_first_lane_the_shuffle_leaves(shuffle, item, ticket):
    store = MemoryStore()
    issued = issuer_of(store, shuffle).issue(Asked("hot", 2))
    assert (store.writes, issued.tickets) == ([item], [ticket, ticket + 4])


def test_each_request_shuffles_all_the_lanes_anew():
    shuffled: list[list[str]] = []
    issuer = issuer_of(MemoryStore(), lambda lanes: shuffled.append([lane.item_key for lane in lanes]))
    issuer.issue(Asked("hot", 1))
    issuer.issue(Asked("hot", 1))
    assert shuffled == [HOT, HOT]


def test_random_picks_spread_over_every_shard_and_never_meet():
    store = MemoryStore()
    issuer = issuer_of(store, random.Random(7).shuffle, start=1000, stride=3)
    tickets = [ticket for count in [1, 2, 5] * 20 for ticket in issuer.issue(Asked("hot", count)).tickets]
    assert set(store.writes) == set(HOT)
    assert len(set(tickets)) == len(tickets) == 160
    for shard, item in enumerate(HOT):  # each lane's tickets: start + stride * shard, then every 12
        assert (store.items[item]["last"] - 1000 - 3 * shard) % 12 == 0


# --- a lane that cannot answer -------------------------------------------------------------------------------------


def test_a_throttled_lane_hands_the_request_to_the_next():
    store = MemoryStore(throttled={"hot#0"})
    assert issuer_of(store).issue(Asked("hot", 1)).tickets == [2]
    assert store.writes == ["hot#0", "hot#1"]


def test_two_throttled_lanes_end_the_request_with_503_without_trying_a_third():
    store = MemoryStore(throttled={"hot#0", "hot#1"})
    assert isinstance(refusal(issuer_of(store)), Unavailable)
    assert store.writes == ["hot#0", "hot#1"]


@pytest.mark.parametrize("throttled, spent, last", [("hot#0", "hot#1", 100), ("hot#1", "hot#0", 99)])
def test_a_throttled_lane_beside_a_spent_one_is_a_503_not_a_409(throttled, spent, last):
    store = MemoryStore(throttled={throttled})
    store.set_last(spent, last, 2)
    assert refusal(issuer_of(store, shards=2, max=100)).status == 503  # a retry may find room on the throttled lane


def test_a_lane_stopped_at_a_fence_is_a_503_and_the_next_lane_answers():
    store = MemoryStore()
    store.set_last("hot#0", 41, STOPPED)
    assert issuer_of(store).issue(Asked("hot", 1)).tickets == [2]
    store.set_last("hot#1", 42, STOPPED)
    assert isinstance(refusal(issuer_of(store)), Unavailable)


# --- exhaustion and the survey -------------------------------------------------------------------------------------


def test_a_spent_lane_passes_the_request_to_one_with_room_after_one_survey():
    store = MemoryStore()
    for item in HOT[:3]:
        store.set_last(item, 97 + HOT.index(item), 4)  # hot#0..2 at their last ticket under max 100
    assert issuer_of(store, max=100).issue(Asked("hot", 1)).tickets == [4]
    assert (store.writes, store.reads) == (["hot#0", "hot#3"], [HOT])


def test_every_lane_spent_is_the_exact_409_for_one_write_and_one_read():
    store = MemoryStore()
    for shard, item in enumerate(HOT):
        store.set_last(item, 97 + shard, 4)
    err = refusal(issuer_of(store, max=100))
    assert (type(err), err.status, err.code) == (Exhausted, 409, "exhausted")
    assert err.message == (
        "counter 'hot' cannot issue "  # the product's words, apart: no work-item number (test_house.py's grep)
        "1 more ticket(s) without passing its max (100): a lane's tickets are 4 apart "
        "(step: stride x regionSlots x shards); raise max in cdk.json, ask for fewer, or use a new key. "
        "Nothing was issued."
    )
    assert (store.writes, store.reads) == (["hot#0"], [HOT])
    assert store.items["hot#3"]["last"] == 100


def test_an_unsharded_key_is_never_surveyed():
    store = MemoryStore()
    issuer = Issuer(Settings(counters={"k": CounterConfig(max=2)}), store)
    issuer.issue(Asked("k", 2))
    assert (refusal(issuer, "k").code, store.writes, store.reads) == ("exhausted", ["k", "k"], [])


def test_a_block_that_does_not_fit_is_refused_whole_though_a_smaller_one_fits():
    store = MemoryStore()
    issuer = Issuer(Settings(counters={"k": CounterConfig(max=10)}), store)
    assert issuer.issue(Asked("k", 8)).tickets == list(range(1, 9))
    assert refusal(issuer, "k", 3).code == "exhausted"
    assert store.items["k"]["last"] == 8  # a refusal writes nothing
    assert issuer.issue(Asked("k", 2)).tickets == [9, 10]
    assert refusal(issuer, "k", 1).code == "exhausted"


def test_a_survey_learns_nothing_from_an_item_of_another_step():
    store = MemoryStore()
    store.set_last("hot#0", 99, 2)  # spent
    store.set_last("hot#1", 10**6, 7)  # another layout's item: advance refuses it with the reason
    assert isinstance(refusal(issuer_of(store, shards=2, max=100)), ConfigMismatch)
    assert store.writes == ["hot#0", "hot#1"]


def test_a_survey_skips_only_the_lanes_it_read_as_spent():
    store = MemoryStore()
    store.set_last("hot#0", 97, 4)
    store.set_last("hot#1", 94, 4)  # room for one more ticket (98), not two
    store.set_last("hot#2", 99, 4)
    issued = issuer_of(store, max=100).issue(Asked("hot", 2))
    assert (issued.tickets, store.writes) == ([4, 8], ["hot#0", "hot#3"])  # hot#3 never issued: not read, tried
    assert issuer_of(store, max=100).issue(Asked("hot", 1)).tickets == [98]  # another function (count 1) finds hot#1's


def test_a_throttled_survey_leaves_the_lanes_to_be_tried_one_by_one():
    store = MemoryStore(reads_throttled=True)
    for shard, item in enumerate(HOT[:3]):
        store.set_last(item, 97 + shard, 4)
    assert issuer_of(store, max=100).issue(Asked("hot", 1)).tickets == [4]
    assert (store.writes, len(store.reads)) == (HOT, 1)


# --- learning ------------------------------------------------------------------------------------------------------


def test_a_spent_key_costs_a_warm_function_nothing_more():
    store = MemoryStore()
    for shard, item in enumerate(HOT):
        store.set_last(item, 97 + shard, 4)
    issuer = issuer_of(store, max=100)
    first, again = refusal(issuer), refusal(issuer)
    assert (again.code, again.message) == (first.code, first.message)
    assert (store.writes, len(store.reads)) == (["hot#0"], 1)
    refusal(issuer_of(store, max=100))  # a cold function (a new Issuer) knows nothing: it pays once again
    assert (store.writes, len(store.reads)) == (["hot#0"] * 2, 2)


def test_what_is_learned_is_per_count_a_smaller_block_still_tries():
    store = MemoryStore()
    issuer = Issuer(Settings(counters={"k": CounterConfig(max=10)}), store)
    issuer.issue(Asked("k", 7))
    refusal(issuer, "k", 4)
    refusal(issuer, "k", 4)  # learned: no write
    refusal(issuer, "k", 5)  # larger: no write either
    assert store.writes == ["k", "k"]
    assert issuer.issue(Asked("k", 3)).tickets == [8, 9, 10]
    assert store.writes == ["k"] * 3


def test_a_lane_learned_spent_is_skipped_while_the_others_answer():
    store = MemoryStore()
    store.set_last("hot#0", 97, 4)
    issuer = issuer_of(store, max=100)
    assert [issuer.issue(Asked("hot", 1)).tickets for _ in range(3)] == [[2], [6], [10]]
    assert store.writes == ["hot#0", "hot#1", "hot#1", "hot#1"]
    assert store.reads == [HOT]


def test_what_a_lane_learned_only_rises_as_other_functions_spend_it():
    store = MemoryStore()
    for item, last in zip(HOT, (97, 94, 99, 100)):  # only hot#1 has room: one ticket, 98
        store.set_last(item, last, 4)
    warm, other = issuer_of(store, max=100), issuer_of(store, max=100)
    refusal(warm, count=2)  # learns every lane's last from the survey
    assert other.issue(Asked("hot", 1)).tickets == [98]
    del store.writes[:]
    refusal(warm)  # tries hot#1, as learned; refused, it learns hot#1 is spent
    refusal(warm)
    assert store.writes == ["hot#1"]


def test_what_is_learned_is_forgotten_wholesale_past_its_bound(monkeypatch):
    monkeypatch.setattr(tickets.issuer, "_REMEMBERED_LANES", 1)
    store = MemoryStore()
    counters = {key: CounterConfig(max=1) for key in ("a", "b")}
    issuer = Issuer(Settings(counters=counters), store)
    issuer.issue(Asked("a", 1))
    issuer.issue(Asked("b", 1))
    refusal(issuer, "a")
    refusal(issuer, "b")
    refusal(issuer, "b")  # still remembered
    refusal(issuer, "a")  # forgotten when b was learned: written again
    assert store.writes == ["a", "b", "a", "b", "a"]


def test_the_rate_is_remembered_between_requests_and_reported_once_a_minute(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(tickets.issuer, "time", SimpleNamespace(monotonic=lambda: now[0]))
    store = MemoryStore()
    issuer = Issuer(Settings(counters={"k": CounterConfig(max=1001 + 144_000 * 2)}), store)

    def at(seconds: float) -> tuple[float | None, float | None]:
        now[0] = seconds
        issued = issuer.issue(Asked("k", 1))
        return issued.per_day, issued.days_left

    assert at(0) == (None, None)  # the window opens
    assert at(30) == (None, None)
    store.set_last("k", 1000, 1)  # other functions' tickets count: the rate is `last`'s
    assert at(600) == (144_000.0, 2.0)  # (1001 - 1) tickets in 600 s
    assert at(630) == (None, None)  # reported less than a minute ago
    assert at(660)[0] == 144_000.0  # the same window's rate, again after a minute


# --- epochs, state, a key's limits ---------------------------------------------------------------------------------


def test_a_key_above_a_fence_issues_from_its_epochs_items_only():
    store = MemoryStore()
    store.set_last("k", 499, STOPPED)  # the old layout's item, stopped at the fence
    counter = CounterConfig(start=500, stride=2, shards=2, epoch=3, fence=500)
    issuer = Issuer(Settings(counters={"k": counter}), store, in_order)
    assert issuer.issue(Asked("k", 2)).tickets == [500, 504]
    assert store.writes == ["k@3#0"]
    state = issuer.state("k")
    assert state["epoch"] == {"number": 3, "fence": 500, "start": 500}
    assert [(row["counter"], row["first"], row["last"]) for row in state["lanes"]] == [
        ("k@3#0", 500, 504),
        ("k@3#1", 502, None),
    ]


def test_state_reads_every_lane_once_and_a_key_never_issued_is_404():
    store = MemoryStore()
    issuer = issuer_of(store, list.reverse)
    with pytest.raises(NotFound):
        issuer.state("hot")
    issuer.issue(Asked("hot", 3))
    state = issuer.state("hot")
    assert (state["last"], state["step"], [row["last"] for row in state["lanes"]]) == (12, 4, [None] * 3 + [12])
    assert store.reads == [HOT, HOT]
    assert "epoch" not in state


def test_strict_keys_and_max_block_refuse_before_any_write():
    store = MemoryStore()
    counters = {"k": CounterConfig(max_block=10)}
    issuer = Issuer(Settings(strict_keys=True, counters=counters), store, config_name="the test's config")
    with pytest.raises(NotFound, match="strictKeys is on and the test's config does not configure 'other'"):
        issuer.issue(Asked("other", 1))
    issuer.check_block("k", 10)
    with pytest.raises(BadRequest, match="holds at most 10 tickets \\(maxBlock in the test's config\\)"):
        issuer.check_block("k", 11)
    assert store.writes == []
