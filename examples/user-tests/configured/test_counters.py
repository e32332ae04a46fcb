"""tickets_config overridden in conftest.py: the server serves the team's counters."""

from __future__ import annotations

import pytest

from tickets_client.errors import TicketsError

pytestmark = pytest.mark.usefixtures("tickets_fresh_server")  # every test starts from empty counters


def test_the_configured_counters_start_and_stride_as_configured(tickets_client):
    assert tickets_client.next("orders", count=2) == [5000, 5001]
    assert tickets_client.next("invoices", count=3) == [1, 11, 21]


def test_a_range_block_and_the_state(tickets_client):
    block = tickets_client.block("orders", 1000)
    assert (block.first, block.last, block.count) == (5000, 5999, 1000)
    assert tickets_client.state("orders")["last"] == 5999


def test_strict_keys_refuse_an_unconfigured_key(tickets_client):
    with pytest.raises(TicketsError) as refused:
        tickets_client.next("not-configured")
    assert refused.value.status == 404
