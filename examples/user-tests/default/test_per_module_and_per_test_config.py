"""`tickets_config` overridden by one module, and by one test: each config gets a server of its own,
started once and shared by the tests that declare it, whatever the order the tests run in."""

from __future__ import annotations

import pytest


@pytest.fixture
def tickets_config():
    """This module's config (the rest of default/ keeps the plugin's default)."""
    return {"regions": {"us-east-1": 0}, "counters": {"orders": {"start": 100}}}


def test_the_modules_config_is_served(tickets_fresh_server, tickets_client):
    assert tickets_client.next("orders") == [100]


def test_the_modules_tests_share_one_server(tickets_server, tickets_servers, tickets_config):
    assert tickets_server is tickets_servers(tickets_config)


@pytest.mark.parametrize("tickets_config", [{"regions": {"us-east-1": 0}, "counters": {"orders": {"start": 7}}}])
def test_one_test_declares_a_config_of_its_own(tickets_fresh_server, tickets_client):
    assert tickets_client.next("orders", count=2) == [7, 8]


def test_an_equal_config_written_in_another_order_is_the_same_server(tickets_server, tickets_servers):
    assert tickets_servers({"counters": {"orders": {"start": 100}}, "regions": {"us-east-1": 0}}) is tickets_server
