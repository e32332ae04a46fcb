"""The lanes math of docs/explanation/design.md#lanes, by example and by property over random configs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tickets.sequence import lanes_of
from tickets.settings import CounterConfig
from tickets_deploy.rules import MAX_TICKET


def every_lane(counter: CounterConfig, region_slots: int):
    """All lanes of a key, over every region slot and shard, as the whole deployment has them."""
    return [lane for slot in range(region_slots) for lane in lanes_of("k", counter, slot, region_slots)]


def test_default_counter_is_one_dense_lane():
    [lane] = lanes_of("orders", CounterConfig(), 0, 1)
    assert (lane.item_key, lane.first, lane.step, lane.seed) == ("orders", 1, 1, 0)
    assert [lane.ticket(n) for n in range(4)] == [1, 2, 3, 4]


def test_spec_example_two_regions_two_shards():
    counter = CounterConfig(start=5000, stride=10, shards=2)
    lanes = every_lane(counter, region_slots=2)
    assert [lane.index for lane in lanes] == [0, 1, 2, 3]
    assert [lane.item_key for lane in lanes] == ["k#0", "k#1", "k#0", "k#1"]  # one table per region
    assert [lane.first for lane in lanes] == [5000, 5010, 5020, 5030]
    assert {lane.step for lane in lanes} == {40}
    assert [lane.ticket(1) for lane in lanes] == [5040, 5050, 5060, 5070]


def test_block_ends_at_last_and_ascends_by_step():
    [lane] = lanes_of("k", CounterConfig(start=3, stride=5), 0, 1)
    assert list(lane.block(last=23, count=1)) == [23]
    assert list(lane.block(last=23, count=3)) == [13, 18, 23]
    million = lane.block(last=3 + 5 * 999_999, count=1_000_000)  # a range: nothing is listed
    assert (million.start, million[-1], million.step, len(million)) == (3, 3 + 5 * 999_999, 5, 1_000_000)


def test_limit_is_the_highest_last_that_still_fits_the_block():
    [lane] = lanes_of("k", CounterConfig(start=1, stride=2, max=21), 0, 1)  # tickets 1, 3, ..., 21
    assert lane.limit(1) == 19  # from last=19 one more ticket (21) fits
    assert lane.block(lane.limit(1) + lane.step * 1, 1)[-1] == 21
    assert lane.limit(3) == 15  # 17, 19, 21
    assert lane.limit(11) == -1  # the whole range 1..21 from the seed (-1)
    assert lane.limit(12) < lane.seed  # twelve tickets never fit


def test_accepts_last_takes_the_seed_and_tickets_of_the_lane_only():
    lanes = lanes_of("k", CounterConfig(start=100, stride=10), region_slot=1, region_slots=2)
    [lane] = lanes
    assert (lane.first, lane.step, lane.seed) == (110, 20, 90)
    assert lane.accepts_last(90)  # nothing issued yet
    assert lane.accepts_last(110) and lane.accepts_last(130)
    assert not lane.accepts_last(120)  # slot 0's ticket
    assert not lane.accepts_last(115)  # not a ticket at all
    assert not lane.accepts_last(70)  # below the lane: would issue tickets below start
    assert not lane.owns(90)


configs = st.builds(
    lambda start, stride, shards, slots: (CounterConfig(start=start, stride=stride, shards=shards), slots),
    start=st.integers(0, MAX_TICKET // 2**20),
    stride=st.integers(1, 1000),
    shards=st.integers(1, 8),
    slots=st.integers(1, 6),
)


@settings(max_examples=150, deadline=None)
@given(configs, st.integers(1, 40))
def test_lanes_partition_the_progression(config, count):
    counter, region_slots = config
    lanes = every_lane(counter, region_slots)
    assert len(lanes) == region_slots * counter.shards
    issued = {lane.index: [lane.ticket(n) for n in range(count)] for lane in lanes}
    everything = [ticket for tickets in issued.values() for ticket in tickets]

    assert len(set(everything)) == len(everything), "two lanes share a ticket"
    assert all(t >= counter.start and (t - counter.start) % counter.stride == 0 for t in everything)
    assert all(a < b for tickets in issued.values() for a, b in zip(tickets, tickets[1:]))
    progression = [counter.start + counter.stride * i for i in range(len(lanes) * count)]
    assert sorted(everything) == progression


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**12), st.integers(1, 1000), st.integers(1, 50))
def test_a_single_lane_is_dense(start, stride, count):
    [lane] = lanes_of("k", CounterConfig(start=start, stride=stride), 0, 1)
    assert [lane.ticket(n) for n in range(count)] == [start + stride * n for n in range(count)]


@settings(max_examples=150, deadline=None)
@given(configs, st.integers(0, 100), st.integers(1, 1000))
def test_blocks_are_the_lanes_next_tickets(config, issued_before, count):
    counter, region_slots = config
    for lane in every_lane(counter, region_slots):
        last = lane.seed + issued_before * lane.step  # what UpdateItem stores before this request
        new_last = last + count * lane.step
        assert list(lane.block(new_last, count)) == [lane.ticket(issued_before + i) for i in range(count)]
        assert lane.accepts_last(last) and lane.accepts_last(new_last)
        assert not lane.accepts_last(last + 1) or lane.step == 1


@settings(max_examples=150, deadline=None)
@given(configs, st.integers(0, 10**6), st.integers(1, 1000))
def test_limit_admits_a_block_exactly_when_its_last_ticket_is_within_max(config, span, count):
    counter, region_slots = config
    counter = CounterConfig(start=counter.start, stride=counter.stride, shards=counter.shards, max=counter.start + span)
    for lane in every_lane(counter, region_slots):
        boundary = max(0, (counter.max - lane.first) // lane.step - count + 1)  # n where blocks stop fitting
        for issued_before in {0, max(0, boundary - 1), boundary, boundary + 1}:
            last = lane.seed + issued_before * lane.step
            fits = lane.ticket(issued_before + count - 1) <= counter.max
            assert (last <= lane.limit(count)) == fits
