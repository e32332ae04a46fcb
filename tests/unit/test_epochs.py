"""The fence's arithmetic (lambda_src/tickets/epochs.py, docs/explanation/epochs-and-fences.md)."""

from __future__ import annotations

import pytest

from tickets.epochs import epoch_start, fence_above, item_key, key_and_epoch


@pytest.mark.parametrize("key, epoch, shards, shard", [("orders", 0, 1, 0), ("orders", 2, 4, 3), ("eu", 10, 1, 0)])
def test_an_items_key_and_epoch_are_read_back_from_its_name(key, epoch, shards, shard):
    assert key_and_epoch(item_key(key, epoch, shards, shard)) == (key, epoch)


@pytest.mark.parametrize("name", ["orders@x", "orders@", "orders@²"])
def test_a_name_typed_in_by_hand_is_its_own_key_of_epoch_0(name):
    assert key_and_epoch(name + "#1") == (name, 0)


def test_the_fence_is_above_every_final_last_and_never_below_the_old_start():
    assert fence_above(5000, [5012, None, 5003]) == 5013
    assert fence_above(5000, [None, None]) == 5000


@pytest.mark.parametrize(
    "fence, start, stride, first",
    [
        (5013, 5000, 1, 5013),  # the fence itself
        (5013, 5000, 10, 5020),  # the next number = start (mod stride)
        (5013, 1, 10, 5021),
        (5013, 1_000_000, 1, 1_000_000),  # a start raised with the layout change: never below it
        (5013, 1_000_001, 10, 1_000_001),
    ],
)
def test_the_new_layout_starts_at_the_first_number_above_the_fence_and_its_start_on_the_stride(
    fence, start, stride, first
):
    assert epoch_start(fence, start, stride) == first
    assert first >= fence and first >= start and (first - start) % stride == 0
