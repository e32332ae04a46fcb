"""The deployment config (SPEC §5): what parses, what is refused and how, and the handler's view."""

from __future__ import annotations

import copy

import pytest

from tickets.config import (
    MAX_SAFE_INTEGER,
    MAX_TICKET,
    SETTINGS_ENV,
    ConfigError,
    CounterConfig,
    Settings,
    handler_environment,
    parse_config,
)

from conftest import SPEC_CONFIG


def with_changes(**changes) -> dict:
    raw = copy.deepcopy(SPEC_CONFIG)
    raw.update(changes)
    return raw


def test_the_spec_example_parses():
    config = parse_config(SPEC_CONFIG)
    assert config.regions == {"us-east-1": 0}
    assert (config.default_key, config.auth, config.region_slots, config.strict_keys) == \
        ("default", "AWS_IAM", 1, False)
    assert config.counters == {
        "orders": CounterConfig(start=5000),
        "invoices": CounterConfig(start=1, stride=10),
    }
    assert config.counters["orders"].max == MAX_SAFE_INTEGER


def test_defaults_fill_everything_but_regions():
    config = parse_config({"regions": {"eu-west-1": 0}})
    assert (config.default_key, config.auth, config.region_slots, config.counters) == \
        ("default", "AWS_IAM", 1, {})
    assert config.idempotency_expiry_seconds == 3600


def test_max_may_be_raised_to_int64():
    config = parse_config(with_changes(counters={"big": {"max": MAX_TICKET}}))
    assert config.counters["big"].max == 2**63 - 1


@pytest.mark.parametrize("changes, field", [
    ({"regions": {"us-east-1": 0, "eu-west-1": 1}}, "tickets.regions.eu-west-1"),  # slot >= regionSlots
    ({"regions": {"us-east-1": 0, "eu-west-1": 0}, "regionSlots": 2}, "tickets.regions.eu-west-1"),
    ({"regions": {"us-east-1": -1}}, "tickets.regions.us-east-1"),
    ({"regions": {"us-east-1": True}}, "tickets.regions.us-east-1"),
    ({"regions": {"US East": 0}}, "tickets.regions.US East"),
    ({"regions": {}}, "tickets.regions"),
    ({"counters": {"orders": {"stride": 0}}}, "tickets.counters.orders.stride"),
    ({"counters": {"orders": {"start": 10, "max": 9}}}, "tickets.counters.orders.max"),
    ({"counters": {"orders": {"max": MAX_TICKET + 1}}}, "tickets.counters.orders.max"),
    ({"counters": {"orders": {"start": -1}}}, "tickets.counters.orders.start"),
    ({"counters": {"orders": {"shards": 0}}}, "tickets.counters.orders.shards"),
    ({"counters": {"orders": {"start": True}}}, "tickets.counters.orders.start"),
    ({"counters": {"orders": {"start": 1.5}}}, "tickets.counters.orders.start"),
    ({"counters": {"orders": {"start": "5000"}}}, "tickets.counters.orders.start"),
    ({"counters": {"orders": {"begin": 1}}}, "tickets.counters.orders.begin"),
    ({"counters": {"orders": 5000}}, "tickets.counters.orders"),
    ({"counters": {"_orders": {}}}, "tickets.counters._orders"),
    ({"counters": {"a/b": {}}}, "tickets.counters.a/b"),
    ({"counters": {"x" * 101: {}}}, "tickets.counters.xxx"),
    ({"counters": []}, "tickets.counters"),
    ({"regionSlots": True}, "tickets.regionSlots"),
    ({"regionSlots": 0}, "tickets.regionSlots"),
    ({"auth": "aws_iam"}, "tickets.auth"),
    ({"auth": None}, "tickets.auth"),
    ({"defaultKey": ".hidden"}, "tickets.defaultKey"),
    ({"strictKeys": "yes"}, "tickets.strictKeys"),
    ({"regionslots": 2}, "tickets.regionslots"),  # unknown field (a typo) at the top level
    ({"idempotencyExpirySeconds": 10}, "tickets.idempotencyExpirySeconds"),
    ({"reservedConcurrency": 0}, "tickets.reservedConcurrency"),
    ({"logRetentionDays": 31}, "tickets.logRetentionDays"),
])
def test_an_invalid_config_names_the_field(changes, field):
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(**changes))
    assert str(refused.value).startswith(field), str(refused.value)


def test_a_missing_config_says_where_it_belongs():
    with pytest.raises(ConfigError, match="cdk.json"):
        parse_config(None)


def test_handler_environment_round_trips_through_settings():
    config = parse_config(with_changes(
        regions={"us-east-1": 0, "eu-west-1": 2}, regionSlots=3, strictKeys=True, defaultKey="main",
        idempotencyExpirySeconds=600, counters={"orders": {"start": 5000, "max": 10**15, "shards": 4}}))
    environment = handler_environment(config, "eu-west-1", counter_table="c", idempotency_table="i")
    assert (environment["TICKETS_TABLE"], environment["TICKETS_IDEMPOTENCY_TABLE"]) == ("c", "i")
    assert environment["POWERTOOLS_SERVICE_NAME"] == "tickets"
    assert environment["POWERTOOLS_METRICS_NAMESPACE"]
    settings = Settings.from_json(environment[SETTINGS_ENV])
    assert settings == Settings(region_slot=2, region_slots=3, default_key="main", strict_keys=True,
                                counters={"orders": CounterConfig(start=5000, max=10**15, shards=4)},
                                idempotency_expiry_seconds=600)


def test_handler_environment_refuses_an_unconfigured_region():
    with pytest.raises(ConfigError, match="regions"):
        handler_environment(parse_config(SPEC_CONFIG), "eu-west-1", counter_table="c", idempotency_table="i")


def test_counter_lookup_with_and_without_strict_keys():
    orders = CounterConfig(start=5000)
    lenient = Settings(counters={"orders": orders})
    strict = Settings(counters={"orders": orders}, strict_keys=True, default_key="main")
    assert lenient.counter("orders") == strict.counter("orders") == orders
    assert lenient.counter("anything") == CounterConfig()
    assert strict.counter("anything") is None
    assert strict.counter("main") == CounterConfig()  # the default key is always served


@pytest.mark.parametrize("region, reason", [
    ("us-east-9", "not a region"),
    ("cn-north-1", "aws-cn"),
    ("us-gov-west-1", "aws-us-gov"),
    ("ap-southeast-6", "not published"),
])
def test_a_region_the_stack_cannot_serve_is_refused_naming_the_field_and_why(region, reason):
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(regions={region: 0}))
    message = str(refused.value)
    assert message.startswith(f"tickets.regions.{region}"), message
    assert reason in message and "Powertools" in message


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "ap-southeast-7", "mx-central-1", "il-central-1"])
def test_commercial_regions_with_the_layer_are_accepted(region):
    assert parse_config(with_changes(regions={region: 0})).regions == {region: 0}
