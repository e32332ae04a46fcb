"""The schema is the one definition of each field: the construct's typed props, the services' shared
settings and the series options are derived from it (no CDK here: the props are parsed as the construct
parses them)."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from tickets.series.config import SeriesConfig
from tickets.settings import CounterConfig
from tickets_deploy.config import parse_config, parse_props, props_of
from tickets_deploy.ledger import CounterRecord
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import COUNTER_FIELDS
from tickets_deploy.services import ONE_NUMBERING, DeclaredService, as_props, declared, refuse_clash


def test_an_unknown_prop_is_refused_naming_it_and_the_construct() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_props({"tabel_name": "shop"}, "us-east-1", "TicketService Shop/Orders")
    assert str(refused.value).startswith("TicketService Shop/Orders: tabel_name: not a prop of TicketService")


def test_a_config_given_as_props_is_the_same_config() -> None:
    """props_of (how the reference app gives cdk.json's config to the construct) and parse_props are each other's
    inverse for one region, with every field away from its default; each prop is the field's, in its own type."""
    raw = {
        "regions": {"eu-west-1": 1},
        "regionSlots": 3,
        "tableName": "shop-orders",
        "defaultKey": "orders",
        "strictKeys": True,
        "counters": {"orders": {"start": 5000, "stride": 2, "max": str(2**60), "shards": 4, "maxBlock": 10}},
        "series": {"invoices": {"start": 7, "period": "yearly", "utcOffset": "+05:30", "format": "INV/{series}/{n}"}},
        "reservedConcurrency": 5,
        "idempotencyExpirySeconds": 600,
        "logRetentionDays": 90,
        "corsOrigins": ["https://shop.example.com"],
        "maxBlock": 100,
        "callers": ["111122223333"],
        "compat": {"path": "counter"},
        "access": {"111122223333": {"issue": ["orders"]}},
    }
    config = parse_config(raw)
    props = props_of(config, "eu-west-1")
    assert parse_props(props, "eu-west-1", "TicketService S/T") == config
    assert props["region_slot"] == 1 and props["compat"] == {"path": "counter"}
    assert props["access"] == raw["access"] and props["cors_origins"] == ("https://shop.example.com",)


def test_series_options_are_snake_case_props_like_every_other_prop() -> None:
    snake = {
        "invoices": {"period": "yearly", "period_start_month": 4, "utc_offset": "+05:30", "format": "{series}-{n}"}
    }
    camel = {"invoices": {"period": "yearly", "periodStartMonth": 4, "utcOffset": "+05:30", "format": "{series}-{n}"}}
    from_snake = parse_props({"series": snake}, "us-east-1", "TicketService S/T")
    assert from_snake.series == parse_props({"series": camel}, "us-east-1", "TicketService S/T").series
    assert from_snake.series["invoices"] == SeriesConfig(
        period="yearly", period_start_month=4, utc_offset_minutes=330, format="{series}-{n}"
    )
    with pytest.raises(ConfigError) as refused:  # cdk.json keeps its own (camelCase) names
        parse_config({"regions": {"us-east-1": 0}, "series": snake})
    assert "unknown field(s) period_start_month, utc_offset" in str(refused.value)


def _service(path: str, region: str, slot: int, **raw: typing.Any) -> DeclaredService:
    config = parse_config({"regions": {region: slot}, "regionSlots": 2, **raw})
    return DeclaredService(path, config, region, None, config.table_name, path.split("/")[0], ("T", "I"))


def test_one_service_in_two_regions_shares_the_settings_of_its_numbering() -> None:
    assert ONE_NUMBERING == ("region_slots", "default_key", "strict_keys", "counters", "series")
    east, west = _service("East/Orders", "us-east-1", 0), _service("West/Orders", "eu-west-1", 1)
    assert declared([east, west])["tickets-counters"].regions == {"us-east-1": 0, "eu-west-1": 1}
    other = _service("West/Orders", "eu-west-1", 1, strictKeys=True)
    with pytest.raises(ValueError, match="West/Orders and East/Orders share the table name 'tickets-counters'"):
        declared([east, other])
    with pytest.raises(ValueError, match="region_slot 0 is already us-east-1's"):
        declared([east, _service("West/Orders", "eu-west-1", 0)])


def test_two_services_of_one_table_name_in_one_region_are_refused() -> None:
    first = _service("Shop/Orders", "us-east-1", 0)
    second = _service("Shop2/Orders", "us-east-1", 1)
    with pytest.raises(ValueError, match="has the same table name and service name"):
        refuse_clash(second, [first])
    same_stack = DeclaredService("Shop/Other", first.config, "eu-west-1", None, "x", "Shop", ("T", "Z"))
    with pytest.raises(ValueError, match="the logical id\\(s\\) T are taken by Shop/Orders"):
        refuse_clash(same_stack, [first])


def test_a_refusal_of_an_app_built_with_props_names_the_constructs_and_the_prop() -> None:
    """A library user wrote props in app.py, not cdk.json: the ledger's lines name the constructs and props."""
    orders = _service("Shop/Orders", "us-east-1", 0, tableName="shop", series={"invoices": {"start": 5}})
    problems = "\n".join(
        [
            "shop: counters.orders.start: the ledger records 5000, cdk.json says 1. Keep it.",
            "shop: regionSlots: the ledger records 1, cdk.json says 2. Keep regionSlots at 1.",
            "shop: series.invoices.periodStartMonth: the ledger records 4, cdk.json says 1. Keep invoices.",
            "shop: regions.eu-west-1: the ledger gives slot 0 to us-east-1, cdk.json gives it to eu-west-1.",
            "other: tableName: the ledger records 'x', cdk.json says 'y'.",
        ]
    )
    assert as_props(problems, [orders]).splitlines() == [
        "TicketService Shop/Orders, prop counters['orders'].start: the ledger records 5000, the app says 1. Keep it.",
        "TicketService Shop/Orders, prop region_slots: the ledger records 1, the app says 2. Keep regionSlots at 1.",
        "TicketService Shop/Orders, prop series['invoices'].period_start_month: the ledger records 4, the app says 1. "
        "Keep invoices.",
        "TicketService Shop/Orders, prop region_slot: the ledger gives slot 0 to us-east-1, the app gives it to "
        "eu-west-1.",
        "other: tableName: the ledger records 'x', cdk.json says 'y'.",  # no construct of that table: as it was
    ]


def test_the_ledgers_counter_record_is_the_permanent_counter_fields() -> None:
    assert [each.name for each in dataclasses.fields(CounterRecord)] == [
        each.attribute for each in COUNTER_FIELDS if each.permanent
    ]
    assert CounterRecord.of(CounterConfig(start=7, stride=2, max=99, shards=3, max_block=5)) == CounterRecord(7, 2, 3)
