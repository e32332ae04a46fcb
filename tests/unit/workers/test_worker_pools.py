"""Worker pools' plain parts: the config's rule, the settings' round trip, the search for a free id, a full pool's
Retry-After (tickets/workers/config.py; the handler's side is tests/functional/workers/test_workers.py)."""

from __future__ import annotations

import pytest

from tickets.settings import Settings
from tickets.workers import PoolConfig
from tickets.workers.config import free_workers, retry_after_seconds
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_deploy.rules import ConfigError

BASE = {"regions": {"us-east-1": 0}}


def test_pools_reach_the_functions_settings_and_round_trip():
    config = parse_config({**BASE, "workers": {"snowflake": {"size": 1024, "ttlSeconds": 60}}})
    assert config.workers == {"snowflake": PoolConfig(1024, 60)}
    settings = region_settings(config, "us-east-1")
    assert Settings.from_json(settings.to_json()).workers == {"snowflake": PoolConfig(1024, 60)}
    assert "workers" not in Settings().to_json()  # none configured: the environment stays as it was


@pytest.mark.parametrize(
    "pools, says",
    [
        ([], "tickets.workers: must map pool names to pools"),
        ({"_x": {"size": 1, "ttlSeconds": 10}}, "invalid pool name '_x'"),
        ({"p": {"size": 0, "ttlSeconds": 10}}, "tickets.workers.p.size: must be a whole number from 1 to 65536"),
        ({"p": {"size": 65537, "ttlSeconds": 10}}, "tickets.workers.p.size"),
        ({"p": {"size": 1, "ttlSeconds": 9}}, "tickets.workers.p.ttlSeconds: must be a whole number from 10 to 86400"),
        ({"p": {"size": 1, "ttlSeconds": 86401}}, "tickets.workers.p.ttlSeconds"),
        ({"p": {"size": 1}}, "tickets.workers.p.ttlSeconds"),
        ({"p": {"size": 1, "ttlSeconds": 10, "ttl": 3}}, "tickets.workers.p.ttl: unknown field"),
        ({"p": {"size": True, "ttlSeconds": 10}}, "tickets.workers.p.size"),
    ],
)
def test_a_bad_pool_is_refused_naming_the_field(pools, says):
    with pytest.raises(ConfigError, match=says.replace(".", r"\.").replace("(", r"\(")):
        parse_config({**BASE, "workers": pools})


def test_free_ids_are_the_gaps_and_the_expired_in_order():
    live: list[int] = []
    items = [(3, 50), (4, 200), (6, 100), (9, 300)]  # (worker, expiresAt); now is 100
    assert list(free_workers(iter(items), 2, 11, 100, live)) == [2, 3, 5, 6, 7, 8, 10]
    assert live == [200, 300]
    assert list(free_workers(iter([]), 0, 3, 100, [])) == [0, 1, 2]
    full: list[int] = []
    assert list(free_workers(iter([(0, 5000), (1, 2500)]), 0, 2, 1000, full)) == [] and full == [5000, 2500]


def test_a_full_pools_retry_after_is_whole_seconds_to_the_earliest_expiry_at_least_one():
    assert retry_after_seconds([5000, 2500], 1000, 60) == 2
    assert retry_after_seconds([1001], 1000, 60) == 1
    assert retry_after_seconds([], 1000, 60) == 60  # every id taken while it searched: a ttl
