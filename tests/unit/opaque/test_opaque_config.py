"""A counter's `opaque` field: its rule (each refusal names the field; a domain too small for the counter's
tickets names max, the domain and both ways out), its encodings (the function's settings, the construct's props),
series that cannot be opaque, the function that refuses to serve it until answers carry ids, and the ledger,
which records it as permanent (existing ledgers unchanged) and refuses any change but a newer key version."""

from __future__ import annotations

import json

import pytest

from ledger_examples import BASE, config, one_service
from tickets.opaque import OpaqueConfig, OpaqueKeyError, parse_keys
from tickets.settings import OPAQUE_KEYS_ENV, CounterConfig, Settings
from tickets_deploy.config import parse_config, parse_props, to_raw
from tickets_deploy.environment import handler_environment
from tickets_deploy.ledger import CounterRecord, LedgerError, from_text, record, record_services, to_text
from tickets_deploy.opaque_keys import new_key_file_text, opaque_keys_parameter, read_key_file
from tickets_deploy.rules import ConfigError

TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
ORDERS = {"start": 5000, "shards": 2, "max": 99_999_999, "opaque": TEN_DIGITS}


def opaque_config(opaque, **orders) -> object:
    return config(counters={**BASE["counters"], "orders": {**ORDERS, **orders, "opaque": opaque}})


def refused(opaque, **orders) -> str:
    with pytest.raises(ConfigError) as refusal:
        opaque_config(opaque, **orders)
    return str(refusal.value)


def test_an_opaque_counter_parses_with_the_defaults_filled_in():
    counter = opaque_config(TEN_DIGITS).counters["orders"]
    assert counter.opaque == OpaqueConfig(10, "digits", "luhn", key_versions=10, key_version=1)
    base32 = opaque_config({"width": 8, "alphabet": "base32", "keyVersions": 3, "keyVersion": 2}).counters["orders"]
    assert base32.opaque == OpaqueConfig(8, "base32", None, 3, 2)


def test_a_domain_that_cannot_hold_max_is_refused_naming_the_numbers_and_both_ways_out():
    """10 digits with a Luhn check and 10 key versions hold 10^8 tickets (0 .. 99,999,999)."""
    assert refused(TEN_DIGITS, max=100_000_000) == (
        "tickets.counters.orders.opaque: 10 digits with a Luhn check and 10 key versions give each key version "
        "100,000,000 ids, for tickets 0 to 99,999,999; tickets.counters.orders.max is 100,000,000, and every ticket "
        "the counter can issue needs an id. Lower tickets.counters.orders.max to 99999999, or make the ids 11 digits "
        "(1,000,000,000 ids per key version)."
    )
    message = refused(TEN_DIGITS, max=2**53 - 1)  # max's default: an opaque counter sets its max
    assert "max is 9,007,199,254,740,991 (2^53-1, its default)" in message
    assert message.endswith("or make the ids 13 base32 characters (115,292,150,460,684,697 ids per key version).")


def test_fewer_key_versions_leave_room_for_more_tickets():
    counter = opaque_config({**TEN_DIGITS, "keyVersions": 1}, max=999_999_999).counters["orders"]
    assert counter.opaque is not None and counter.opaque.ids_per_version == 10**9


@pytest.mark.parametrize(
    ("opaque", "message"),
    [
        ("digits", r"^tickets.counters.orders.opaque: must be an object such as \{\"width\": 10, "),
        ({**TEN_DIGITS, "colour": 1}, r"orders.opaque.colour: unknown field \(known: alphabet, check, keyVersion,"),
        ({**TEN_DIGITS, "alphabet": "hex"}, r"orders.opaque.alphabet: must be one of digits, base32, got 'hex'"),
        ({**TEN_DIGITS, "check": "crc"}, r"orders.opaque.check: must be luhn \(a Luhn check character\), or absent"),
        ({"alphabet": "digits"}, r"orders.opaque.width: must be a whole number from 2 to 15, got None"),
        (
            {**TEN_DIGITS, "width": 16},
            r"orders.opaque.width: at most 15 for digits \(an id read as a number stays a JavaScript-safe integer\)",
        ),
        ({**TEN_DIGITS, "alphabet": "base32", "width": 21}, r"orders.opaque.width: at most 20 for base32, got 21"),
        ({**TEN_DIGITS, "keyVersions": 0}, r"orders.opaque.keyVersions: must be a whole number from 1 to 1000"),
        ({**TEN_DIGITS, "keyVersion": 11}, r"orders.opaque.keyVersion: 11 is above keyVersions \(10\)"),
        ({**TEN_DIGITS, "keyVersion": 0}, r"orders.opaque.keyVersion: must be a whole number from 1 to 10, got 0"),
        (
            {"width": 7, "alphabet": "digits", "check": "luhn"},
            r"7 digits with a Luhn check and 10 key versions give 100,000 ids per key version, fewer than the "
            r"1,000,000 NIST SP 800-38G asks .* make the ids 8 digits \(1,000,000 ids per key version\)\.$",
        ),
    ],
)
def test_bad_opaque_settings_are_refused_naming_the_field(opaque, message):
    with pytest.raises(ConfigError, match=message):
        opaque_config(opaque, max=99_999)


def test_the_settings_carry_opaque_only_when_set():
    """Every environment written so far stays byte for byte: a counter without opaque encodes as it did."""
    plain = CounterConfig(start=5000)
    assert "opaque" not in plain.to_json()
    opaque = opaque_config(TEN_DIGITS).counters["orders"]
    assert opaque.to_json()["opaque"] == {
        "alphabet": "digits",
        "check": "luhn",
        "keyVersion": 1,
        "keyVersions": 10,
        "width": 10,
    }
    settings = Settings(counters={"orders": opaque, "plain": plain})
    assert Settings.from_json(settings.to_json()) == settings


def test_cdk_json_s_shape_and_the_props_round_trip():
    parsed = opaque_config(TEN_DIGITS)
    assert parse_config(json.loads(json.dumps(to_raw(parsed)))) == parsed
    orders = parsed.counters["orders"]
    snake = {"max": 99_999_999, "opaque": {"width": 10, "alphabet": "digits", "check": "luhn", "key_versions": 10}}
    for prop in (orders, snake, {"max": 99_999_999, "opaque": orders.opaque}):
        props = parse_props({"counters": {"orders": prop}}, "us-east-1", "TicketService S/T")
        assert props.counters["orders"].opaque == orders.opaque


def test_a_series_cannot_be_opaque_and_synthesis_says_why():
    with pytest.raises(ConfigError) as refusal:
        config(series={"bills": {"opaque": TEN_DIGITS}})
    assert str(refusal.value).startswith(
        "tickets.series.bills.opaque: a series cannot be opaque: its numbers are consecutive on purpose (an "
        "invoice numbering must show that none is missing)"
    )


def test_the_function_is_told_where_its_keys_are_never_what_they_are():
    """An opaque counter's function gets the name of its service's keys' parameter (one per service, the same in
    every region), and nothing else of the keys; a deployment without opaque counters gets no such variable."""
    environment = handler_environment(opaque_config(TEN_DIGITS), "us-east-1", counter_table="t", idempotency_table="i")
    assert environment[OPAQUE_KEYS_ENV] == "/tickets/tickets-counters/opaque-keys"  # the table name
    assert opaque_keys_parameter("shop-orders") == "/tickets/shop-orders/opaque-keys"
    assert OPAQUE_KEYS_ENV not in handler_environment(config(), "us-east-1", counter_table="t", idempotency_table="i")


# --- the ledger ----------------------------------------------------------------------------------------


def test_the_ledger_records_opaque_settings_and_reads_them_back():
    ledger = record(opaque_config(TEN_DIGITS), None)
    assert ledger.counters["orders"] == CounterRecord(5000, 1, 2, OpaqueConfig(10, "digits", "luhn"))
    assert ledger.counters["invoices"] == CounterRecord(1, 10, 1)  # no opaque: recorded as before
    text = to_text(one_service(ledger))
    assert (
        '"orders": {"opaque": {"alphabet": "digits", "check": "luhn", "keyVersion": 1, "keyVersions": 10, '
        '"width": 10}, "shards": 2, "start": 5000, "stride": 1}' in text
    )
    assert '"invoices": {"shards": 1, "start": 1, "stride": 10}' in text
    assert from_text(text).services["tickets-counters"] == ledger
    assert record(opaque_config(TEN_DIGITS), ledger) == ledger


def test_a_recorded_opaque_record_must_read_back_as_written():
    text = to_text(one_service(record(opaque_config(TEN_DIGITS), None)))
    with pytest.raises(ValueError, match=r"counters.orders.opaque.width: at most 15 for digits"):
        from_text(text.replace('"width": 10}', '"width": 16}'))
    with pytest.raises(ValueError, match=r"counters.orders.opaque: not as the config records opaque settings"):
        from_text(text.replace('"keyVersion": 1, "keyVersions": 10, ', ""))


@pytest.fixture
def recorded():
    return record(opaque_config(TEN_DIGITS), None)


def ledger_refusal(previous, orders) -> str:
    with pytest.raises(LedgerError) as refusal:
        record(config(counters={**BASE["counters"], "orders": orders}), previous)
    return str(refusal.value)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"width": 11}, "cdk.json says 11 digits with a Luhn check and 10 key versions (key version 1)."),
        ({"check": None}, "cdk.json says 10 digits, no check character, and 10 key versions (key version 1)."),
        ({"keyVersions": 5}, "cdk.json says 10 digits with a Luhn check and 5 key versions (key version 1)."),
    ],
)
def test_changed_opaque_settings_are_refused_naming_why(recorded, change, says):
    opaque = {name: value for name, value in {**TEN_DIGITS, **change}.items() if value is not None}
    message = ledger_refusal(recorded, {**ORDERS, "opaque": opaque})
    assert message.startswith(
        "counters.orders.opaque: the ledger records 10 digits with a Luhn check and 10 key versions (key version 1); "
        + says
    )
    assert "The ids already handed out were made with the recorded settings" in message


def test_an_opaque_counter_never_turns_plain_nor_a_plain_one_opaque(recorded):
    plain = {key: value for key, value in ORDERS.items() if key != "opaque"}
    assert ledger_refusal(recorded, plain).startswith(
        "counters.orders.opaque: the ledger records orders with 10 digits with a Luhn check and 10 key versions (key "
        "version 1); cdk.json says none. The counter handed out ids: plain tickets beside them could equal one of them"
    )
    was_plain = record(config(), None)
    assert ledger_refusal(was_plain, ORDERS).startswith(
        "counters.orders.opaque: the ledger records orders with no opaque settings; cdk.json says 10 digits with a "
        "Luhn check and 10 key versions (key version 1). The counter handed out plain tickets: ids beside them"
    )


def test_the_key_version_only_goes_forward(recorded):
    rotated = record(opaque_config({**TEN_DIGITS, "keyVersion": 3}), recorded)
    opaque = rotated.counters["orders"].opaque
    assert opaque is not None and opaque.key_version == 3
    file = record_services(one_service(recorded), {"tickets-counters": opaque_config({**TEN_DIGITS, "keyVersion": 3})})
    assert file.versions[-1].change == "tickets-counters: orders key version 1 -> 3"
    assert ledger_refusal(rotated, {**ORDERS, "opaque": {**TEN_DIGITS, "keyVersion": 2}}).startswith(
        "counters.orders.opaque.keyVersion: the ledger records 3, cdk.json says 2. Rotation only goes forward"
    )


def test_a_key_once_served_unconfigured_cannot_become_opaque():
    loose = record(config(strictKeys=False), None)
    new = {"max": 99_999_999, "opaque": TEN_DIGITS}
    with pytest.raises(LedgerError) as refusal:
        record(config(strictKeys=False, counters={**BASE["counters"], "fresh": new}), loose)
    assert str(refusal.value) == (
        "counters.fresh.opaque: a recorded version served fresh unconfigured, so it may have handed out plain "
        "tickets, and a counter is opaque from its first ticket: an id could equal one of them where callers keep "
        "both. Give opaque ids a key never served (with strictKeys true, nothing serves an unknown key)."
    )
    strict = record(config(), None)  # strictKeys: `fresh` was never served
    assert record(config(counters={**BASE["counters"], "fresh": new}), strict).counters["fresh"].opaque


# --- the key file --------------------------------------------------------------------------------------


def test_a_new_key_file_reads_back_with_a_fresh_32_byte_key_per_version(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(new_key_file_text((1, 2)))
    keys = read_key_file(path)
    assert sorted(keys) == [1, 2] and {len(key) for key in keys.values()} == {32} and keys[1] != keys[2]
    assert parse_keys(new_key_file_text()) != keys  # another key each time


def test_a_key_file_that_cannot_be_used_is_named(tmp_path):
    with pytest.raises(OpaqueKeyError, match=r"absent.json: cannot be read \(No such file or directory\)"):
        read_key_file(tmp_path / "absent.json")
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(OpaqueKeyError, match=r"empty.json: keys: not a JSON object of key versions"):
        read_key_file(tmp_path / "empty.json")
