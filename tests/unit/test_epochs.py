"""The fence's arithmetic (lambda_src/tickets/epochs.py, docs/explanation/epochs-and-fences.md)."""

from __future__ import annotations

import pytest

from tickets.epochs import epoch_start, fence_above


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
