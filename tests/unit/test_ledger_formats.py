"""Every ledger format the project ever wrote upgrades (`python -m tickets_deploy upgrade-ledger`) to the current
one as its reader read it, and accepts the config it recorded; reading refuses an older format naming the upgrade.
The encodings derived from the schema leave an option at its default out, so a field or series option added
later never makes an older ledger or an older function environment unreadable.

The fixtures (tests/fixtures/ledgers/) were written by the codecs of their time: format 1 before the
rollout rule (the repository's tickets.lock.json at 922f7ec), format 1 with the rollout flags (the
codec of 1ddca9c), format 2 (examples/cdk-app's ledger, 7ebf131) and format 2 with series (the codec of
6ca2627, before the schema), retired slots, accounts and a start above 2^53-1; and a series whose ids lack
{series}, which `make init` recorded (the codec of 06051af) before such a series was refused when it would be
recorded: it stays accepted as it is."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ledger_examples import MAIN, PR_B, on
from tickets.config_json import json_name
from tickets.series.config import SeriesConfig
from tickets.settings import CounterConfig, Settings
from tickets_deploy.__main__ import main as tickets_deploy
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import (
    LedgerError,
    LedgerFile,
    Version,
    check_lineage,
    from_text,
    read_ledger_file,
    record,
    record_services,
    upgrade_text,
    version_id,
    write_ledger_file,
)
from tickets_deploy.schema import FIELDS
from tickets_deploy.series_rules import parse_series

LEDGERS = Path(__file__).resolve().parents[1] / "fixtures" / "ledgers"

# Per fixture: a config each of its services accepts as it stands (no new version recorded).
ACCEPTED = {
    "format-1-before-rollout-rule.json": {
        "tickets-counters": {
            "regions": {"us-east-1": 0},
            "counters": {"invoices": {"stride": 10}, "orders": {"start": 5000}},
        }
    },
    "format-1-rollout-rule.json": {
        "tickets-counters": {
            "regions": {"eu-west-1": 1},
            "regionSlots": 2,
            "strictKeys": True,
            "counters": {"invoices": {"stride": 10}, "orders": {"start": 5000}},
        }
    },
    "format-2-two-services.json": {
        "shop-invoice-numbers": {
            "regions": {"eu-west-1": 0},
            "tableName": "shop-invoice-numbers",
            "strictKeys": True,
            "counters": {"credit-notes": {}, "invoices-2026": {}},
        },
        "shop-order-numbers": {
            "regions": {"eu-west-1": 0, "us-east-1": 1},
            "regionSlots": 2,
            "tableName": "shop-order-numbers",
            "strictKeys": True,
            "counters": {"orders": {"start": 5000}},
        },
    },
    "format-2-series-id-without-its-series.json": {  # recorded before such a series was refused (make init)
        "billing": {
            "regions": {"eu-west-1": 0},
            "tableName": "billing",
            "strictKeys": True,
            "series": {"invoices": {"start": 1, "format": "INV-{n:06}"}},
        }
    },
    "format-2-series.json": {
        "shop": {
            "regions": {"us-east-1": 0, "ap-southeast-2": 2},
            "regionSlots": 3,
            "tableName": "shop",
            "counters": {
                "orders": {"start": "36028797018963969", "max": "36028797018963999", "stride": 3, "shards": 2}
            },
            "series": {
                "invoices": {
                    "period": "yearly",
                    "periodStartMonth": 4,
                    "utcOffset": "+05:30",
                    "format": "INV-{series}-{n:06}",
                    "formatMaxLength": 30,
                },
                "plain": {"start": 100},
            },
        }
    },
}


def test_every_format_ever_written_has_a_fixture() -> None:
    assert sorted(path.name for path in LEDGERS.glob("*.json")) == sorted(ACCEPTED)


def upgraded(name: str) -> LedgerFile:
    """The fixture as `upgrade-ledger` leaves it, its lineage checked."""
    ledger = upgrade_text((LEDGERS / name).read_text(encoding="utf-8"))
    check_lineage(ledger, name)
    return ledger


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_an_old_ledger_upgrades_and_accepts_what_it_recorded(name: str) -> None:
    ledger = upgraded(name)
    assert sorted(ledger.services) == sorted(ACCEPTED[name])
    if name.startswith("format-1"):
        assert [version.change for version in ledger.versions] == ["recorded before the ledger had versions (format 1)"]
    configs = {table: parse_config({"tableName": table, **raw}) for table, raw in ACCEPTED[name].items()}
    account = {
        "format-1-rollout-rule.json": "111122223333",
        "format-2-series.json": "111122223333",
        "format-2-series-id-without-its-series.json": "111122223333",
    }.get(name)
    recorded = record_services(ledger, configs, account)  # accepted: no LedgerError
    if name == "format-1-before-rollout-rule.json":  # it predates defaultKeysServed: now recorded
        assert recorded.versions[-1].change == "tickets-counters: default key default served unconfigured"
        assert recorded.services["tickets-counters"].counters == ledger.services["tickets-counters"].counters
    else:
        assert recorded is ledger  # nothing new: the same version


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_reading_refuses_an_older_format_naming_the_upgrade_which_rewrites_it_once_for_all(
    tmp_path, capsys, name
) -> None:
    path = tmp_path / "tickets.lock.json"
    path.write_text((LEDGERS / name).read_text(encoding="utf-8"))
    if name.startswith("format-1"):
        with pytest.raises(LedgerError, match="format 1 .*`python -m tickets_deploy upgrade-ledger`"):
            read_ledger_file(path)
    assert tickets_deploy(["upgrade-ledger", str(path)]) == 0
    assert f"rewritten in the current format, last version {upgraded(name).version}" in capsys.readouterr().out
    assert read_ledger_file(path) == upgraded(name)
    text = path.read_text(encoding="utf-8")
    assert tickets_deploy(["upgrade-ledger", str(path)]) == 0 and path.read_text(encoding="utf-8") == text
    assert "in the current format already; nothing written" in capsys.readouterr().out


def test_format_1_before_the_rollout_rule_is_read_on_the_safe_side() -> None:
    (service,) = upgraded("format-1-before-rollout-rule.json").services.values()
    assert service.unconfigured_keys_served  # any key could have been served unconfigured
    assert service.counters["orders"].start == 5000


def test_a_ledger_from_before_the_rollout_rule_is_upgraded_on_the_safe_side():
    """It cannot say whether unconfigured keys were ever served, so it is read as if they were."""
    old = (
        '{"regionSlots": 1, "tableName": "ttt", "slots": {"0": {"region": "us-east-1"}}, '
        '"counters": {"orders": {"start": 5000, "stride": 1, "shards": 1}}}'
    )
    ledger = upgrade_text(old).services["ttt"]
    assert ledger.unconfigured_keys_served and ledger.served_unconfigured("anything")
    strict = {"regions": {"us-east-1": 0}, "strictKeys": True, "tableName": "ttt"}
    with pytest.raises(LedgerError, match="counters.foo: a new counter"):
        record(parse_config({**strict, "counters": {"orders": {"start": 5000}, "foo": {"start": 9}}}), ledger)


def test_a_format_1_ledger_is_one_root_version_and_is_written_back_in_the_current_format(tmp_path):
    old = {
        "regionSlots": 1,
        "tableName": "tickets-counters",
        "slots": {"0": {"region": "us-east-1"}},
        "counters": {"orders": {"start": 5000, "stride": 1, "shards": 1}},
        "unconfiguredKeysServed": False,
        "defaultKeysServed": ["default"],
    }
    previous = upgrade_text(json.dumps(old))
    assert previous.versions == (Version(version_id(None, previous.services), None, previous.versions[0].change),)
    assert on(MAIN, previous) is previous  # nothing changed: nothing to write, the same version
    grown = on(PR_B, previous)
    path = tmp_path / "tickets.lock.json"
    write_ledger_file(path, grown)
    assert read_ledger_file(path) == grown and grown.versions[-1].parent == previous.version
    assert "services" in json.loads(path.read_text()) and from_text(path.read_text()) == grown


def test_the_series_fixture_holds_big_numbers_retired_slots_and_accounts() -> None:
    (service,) = upgraded("format-2-series.json").services.values()
    assert service.counters["orders"].start == 36028797018963969
    assert service.slots[1].retired and service.slots[2].accounts == ("111122223333",)
    assert set(service.series) == {"invoices", "plain"}


def test_a_series_option_at_its_default_is_left_out_of_every_encoding() -> None:
    """What keeps an older ledger readable when an option is added: the ledger refuses a recorded series
    unless parse_series(entry).to_json() == entry, and an option left at its default is not written."""
    later_options = [json_name(each) for each in dataclasses.fields(SeriesConfig) if "always" not in each.metadata]
    assert later_options  # period, format, formatMaxLength: written only when set
    plain = SeriesConfig()
    for option in later_options:
        assert option not in plain.to_json()
    assert plain.to_json() == {"start": 1, "max": plain.max}
    assert parse_series("k", plain.to_json(), region_slots=1, where="k").to_json() == plain.to_json()


def test_series_options_are_the_series_attributes() -> None:
    assert [json_name(each) for each in dataclasses.fields(SeriesConfig)] == [
        "start",
        "period",
        "periodStartMonth",
        "utcOffset",
        "format",
        "formatMaxLength",
        "max",
    ]


def test_the_deploy_side_and_the_function_agree_on_the_settings() -> None:
    """The fields marked `setting` are exactly the function's Settings (with its slot), so the environment
    the deploy side writes is what tickets.settings reads, field for field."""
    carried = {each.attribute for each in FIELDS if each.setting}
    assert {each.name for each in dataclasses.fields(Settings)} == carried | {"region_slot"}


def test_a_setting_added_later_is_left_out_at_its_default_and_read_back() -> None:
    """An environment written before a setting existed lacks it: from_json gives the default. And a
    setting not written always is written only when it differs from its default."""
    written = json.loads(Settings().to_json())
    assert "series" not in written  # not written always, empty by default
    assert set(written) == {
        "regionSlot",
        "regionSlots",
        "defaultKey",
        "strictKeys",
        "counters",
        "idempotencyExpirySeconds",
        "maxBlock",
        "compatPath",
    }
    always = {each.name for each in dataclasses.fields(Settings) if "always" in each.metadata}
    assert always < {each.name for each in dataclasses.fields(Settings)}
    del written["compatPath"]
    assert Settings.from_json(json.dumps(written)) == Settings()


def test_a_counter_s_epoch_and_fence_are_left_out_until_a_fence_sets_them() -> None:
    """CounterConfig's encoding is derived like Settings': start, stride, max and shards always (every version
    wrote them), maxBlock, epoch and fence only when set, so a deployment that never fenced keeps the
    environment it had; a fenced key's epoch and fence read back as written."""
    plain = CounterConfig(start=5000)
    assert plain.to_json() == {"start": 5000, "stride": 1, "max": 2**53 - 1, "shards": 1}
    assert CounterConfig.from_json(plain.to_json()) == plain
    fenced = CounterConfig(start=5004, shards=4, max_block=10, epoch=1, fence=5003)
    assert fenced.to_json() == {
        "start": 5004,
        "stride": 1,
        "max": 2**53 - 1,
        "shards": 4,
        "maxBlock": 10,
        "epoch": 1,
        "fence": 5003,
    }
    assert CounterConfig.from_json(fenced.to_json()) == fenced
    settings = Settings(counters={"orders": fenced, "plain": plain})
    assert Settings.from_json(settings.to_json()) == settings
    assert set(json.loads(settings.to_json())["counters"]["plain"]) == {"start", "stride", "max", "shards"}


def test_the_upgrade_refuses_what_the_old_reader_refused_and_writes_nothing(tmp_path, capsys) -> None:
    path = tmp_path / "tickets.lock.json"
    path.write_text('{"regionSlots": 1, "tableName": "t", "slots": {"1": {"region": "us-east-1"}}, "counters": {}}')
    assert tickets_deploy(["upgrade-ledger", str(path)]) == 2
    assert "slots.1: not a slot below regionSlots (1)" in capsys.readouterr().err
    assert json.loads(path.read_text())["tableName"] == "t"


def test_the_upgrade_answers_help_instead_of_reading_a_file_named_help(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        tickets_deploy(["upgrade-ledger", "--help"])
    assert (
        exited.value.code == 0
        and "usage: python -m tickets_deploy upgrade-ledger [-h] [path]" in capsys.readouterr().out
    )
    assert not (tmp_path / "--help").exists()


@pytest.mark.parametrize(
    ("where", "value", "refusal"),
    [
        ("versions", 5, "versions: not a list"),
        ("versions", {}, "versions: not a list"),
        ("epochs", {"orders": {}}, "epochs.orders: not a list"),
        ("epochs", {"orders": None}, "epochs.orders: not a list"),
        ("epochs", {"orders": "ab"}, "epochs.orders: not a list"),
    ],
)
def test_a_list_field_holding_something_else_is_refused_by_name(where, value, refusal) -> None:
    raw = json.loads((Path(__file__).parents[2] / "examples" / "cdk-app" / "tickets.lock.json").read_text())
    if where == "versions":
        raw["versions"] = value
    else:
        raw["services"][sorted(raw["services"])[0]]["epochs"] = value
    with pytest.raises(ValueError, match=f"^{refusal}$"):
        from_text(json.dumps(raw))
