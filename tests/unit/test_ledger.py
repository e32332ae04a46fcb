"""The deployment ledger (tickets.lock.json): every change that could repeat a ticket is refused,
naming the field, the old and the new value; every safe change is recorded. Unit tests on the pure
`record` and the file format. With git: tests/functional/test_ledger_git.py; through app.py's entry
point: tests/synth/test_ledger_app.py.

No test reads or writes the repository's own ledger, except one that reads it to check it is what
the shipped cdk.json produces."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ledger_examples import BASE, MAIN, PR_B, config, on, one_service
from tickets_deploy.config import load_config_file, parse_config
from tickets_deploy.ledger import (
    COMMENT,
    UNCONFIGURED,
    CounterRecord,
    Ledger,
    LedgerError,
    LedgerFile,
    PendingFence,
    SlotRecord,
    Version,
    config_from_ledger,
    from_text,
    init_ledger_file,
    layout_changes,
    new_accounts,
    one_way_choices,
    read_ledger,
    read_ledger_file,
    record,
    record_epochs,
    record_services,
    to_text,
    version_id,
    write_ledger_file,
)
from tickets_deploy.rules import ConfigError

ROOT = Path(__file__).resolve().parents[2]

TOP = str(2**63 - 1)


def counters(**changes):
    return {**BASE["counters"], **changes}


@pytest.fixture
def deployed() -> Ledger:
    return record(config(), None)


def refusal(previous: Ledger, **changes) -> str:
    with pytest.raises(LedgerError) as refused:
        record(config(**changes), previous)
    return str(refused.value)


# --- a new deployment ---------------------------------------------------------------------------


def test_no_ledger_is_a_new_deployment_and_everything_is_recorded(deployed):
    assert deployed == Ledger(
        region_slots=4,
        table_name="tickets-counters",
        slots={0: SlotRecord("us-east-1"), 1: SlotRecord("eu-west-1")},
        counters={
            "invoices": CounterRecord(start=1, stride=10, shards=1),
            "orders": CounterRecord(start=5000, stride=1, shards=2),
        },
        unconfigured_keys_served=False,  # strictKeys is true
        default_keys_served=frozenset({"default"}),  # not configured, so served unconfigured
        deployed={"strictKeys": True},  # the non-permanent settings, at their defaults left out
    )


def test_a_new_deployment_records_whether_it_serves_unconfigured_keys():
    assert record(config(strictKeys=False), None).unconfigured_keys_served
    configured_default = record(config(defaultKey="orders"), None)
    assert (configured_default.unconfigured_keys_served, configured_default.default_keys_served) == (False, set())


@pytest.fixture
def loose() -> Ledger:
    """The shipped example's kind of deployment: strictKeys false, so any key is served unconfigured."""
    return record(config(strictKeys=False), None)


def test_the_same_config_again_changes_nothing(deployed):
    assert record(config(), deployed) == deployed


# --- refused ------------------------------------------------------------------------------------


def test_a_changed_region_slots_is_refused(deployed):
    message = refusal(deployed, regionSlots=8)
    assert message.startswith("regionSlots: the ledger records 4, cdk.json says 8.")
    assert "reissue" in message and "free slots" in message


def test_the_issue_scenario_growing_region_slots_to_add_a_region_is_refused():
    """Deployed with one slot; a second region by raising regionSlots would hand out 2, 4, 6 again."""
    one = record(parse_config({"regions": {"us-east-1": 0}}), None)
    with pytest.raises(LedgerError, match=r"^regionSlots: the ledger records 1, cdk.json says 2\."):
        record(parse_config({"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}), one)


def test_a_region_moved_to_another_slot_is_refused(deployed):
    message = refusal(deployed, regions={"us-east-1": 0, "eu-west-1": 2})
    assert message.startswith("regions.eu-west-1: the ledger gives eu-west-1 slot 1, cdk.json gives slot 2.")
    assert "Keep eu-west-1 on slot 1" in message


def test_a_removed_region_coming_back_on_another_slot_is_refused(deployed):
    removed = record(config(regions={"us-east-1": 0}), deployed)
    message = refusal(removed, regions={"us-east-1": 0, "eu-west-1": 3})
    assert message.startswith("regions.eu-west-1: the ledger gives eu-west-1 slot 1, cdk.json gives slot 3.")


def test_a_retired_slot_given_to_another_region_is_refused(deployed):
    """The issue's scenario: eu-west-1 issued 2, 4, 6 on slot 1, then left; ap-south-1 must not get slot 1."""
    removed = record(config(regions={"us-east-1": 0}), deployed)
    message = refusal(removed, regions={"us-east-1": 0, "ap-south-1": 1})
    assert message.startswith(
        "regions.ap-south-1: the ledger gives slot 1 to eu-west-1 (retired), cdk.json gives it to ap-south-1."
    )
    assert "issue the same numbers again" in message and "never-used slots: 2, 3" in message


def test_removing_a_region_and_reusing_its_slot_in_one_change_is_refused(deployed):
    message = refusal(deployed, regions={"us-east-1": 0, "ap-south-1": 1})
    assert message.startswith(
        "regions.ap-south-1: the ledger gives slot 1 to eu-west-1, cdk.json gives it to ap-south-1."
    )


@pytest.mark.parametrize("name, value, old", [("start", 6000, 5000), ("stride", 3, 1), ("shards", 4, 2)])
def test_a_recorded_counters_changed_start_stride_or_shards_is_refused(deployed, name, value, old):
    message = refusal(deployed, counters=counters(orders={"start": 5000, "shards": 2, name: value}))
    assert message.startswith(f"counters.orders.{name}: the ledger records {old}, cdk.json says {value}.")
    assert "add a new counter key" in message
    assert f"or change {name} above a fence: `.venv/bin/python -m tickets_admin fence`" in message
    assert "`make deploy FENCE=1` runs it" in message  # in a clone, the runnable form of the same command


def test_a_changed_start_points_at_tickets_admin_raise(deployed):
    message = refusal(deployed, counters=counters(orders={"start": 9000, "shards": 2}))
    assert "python -m tickets_admin raise orders --above N" in message


def test_a_recorded_counter_removed_is_refused(deployed):
    message = refusal(deployed, counters={"orders": BASE["counters"]["orders"]})
    assert message.startswith(
        "counters.invoices: the ledger records invoices (start 1, stride 10, shards 1), "
        "cdk.json no longer configures it."
    )


def test_a_changed_table_name_is_refused_because_a_new_table_restarts_every_counter(deployed):
    message = refusal(deployed, tableName="tickets-counters-2")
    assert message.startswith("tableName: the ledger records 'tickets-counters', cdk.json says 'tickets-counters-2'.")
    assert "new, empty table" in message and "start again at its start" in message


def test_every_refusal_is_listed_at_once(deployed):
    message = refusal(deployed, regionSlots=2, tableName="other", counters={})
    fields = [line.split(":")[0] for line in message.splitlines()]
    assert fields == ["tableName", "regionSlots", "counters.invoices", "counters.orders"]


def test_big_values_are_named_exactly(deployed):
    big = record(config(counters=counters(big={"start": "36028797018963969", "max": TOP})), deployed)
    message = refusal(big, counters=counters(big={"start": "36028797018963971", "max": TOP}))
    assert message.startswith(
        "counters.big.start: the ledger records 36028797018963969, cdk.json says 36028797018963971."
    )


# --- accepted and recorded ----------------------------------------------------------------------


def test_a_new_counter_is_recorded(deployed):
    ledger = record(config(counters=counters(members={"start": 100})), deployed)
    assert ledger.counters["members"] == CounterRecord(start=100, stride=1, shards=1)
    assert {key: ledger.counters[key] for key in deployed.counters} == dict(deployed.counters)


def test_a_new_region_on_a_never_used_slot_is_recorded(deployed):
    ledger = record(config(regions={"us-east-1": 0, "eu-west-1": 1, "ap-south-1": 3}), deployed)
    assert ledger.slots == {0: SlotRecord("us-east-1"), 1: SlotRecord("eu-west-1"), 3: SlotRecord("ap-south-1")}


def test_a_changed_max_is_accepted_and_recorded_as_deployed(deployed):
    ledger = record(config(counters=counters(orders={"start": 5000, "shards": 2, "max": TOP})), deployed)
    assert ledger == replace(deployed, deployed={"strictKeys": True, "counters": {"orders": {"max": TOP}}})


def test_a_removed_region_retires_its_slot_for_good(deployed):
    removed = record(config(regions={"us-east-1": 0}), deployed)
    assert removed.slots == {0: SlotRecord("us-east-1"), 1: SlotRecord("eu-west-1", retired=True)}
    # Still retired after later deploys that do not mention it.
    assert record(config(regions={"us-east-1": 0, "ap-south-1": 2}), removed).slots[1] == SlotRecord(
        "eu-west-1", retired=True
    )


def test_a_removed_region_may_come_back_to_its_own_slot(deployed):
    """Its retained table (adopted with cdk import) continues where it stopped."""
    removed = record(config(regions={"us-east-1": 0}), deployed)
    assert record(config(), removed) == deployed


def test_other_settings_are_not_the_ledgers_business(deployed):
    ledger = record(config(auth="NONE", strictKeys=True, reservedConcurrency=5, logRetentionDays=365), deployed)
    assert ledger == deployed


def test_what_tickets_admin_needs_is_recorded_as_deployed_never_refused(deployed):
    changed = record(config(defaultKey="orders", maxBlock=10, compat={"path": "counter"}), deployed)
    assert changed == replace(
        deployed,
        deployed={"strictKeys": True, "defaultKey": "orders", "maxBlock": 10, "compat": {"path": "counter"}},
    )
    assert record(config(strictKeys=False), deployed).deployed == {}  # every one at its default


# --- the rollout rule (docs/explanation/ledger.md#the-rollout-rule) ----------------------------------------


def test_the_issue_scenario_a_new_counter_with_its_own_start_is_refused_while_unconfigured_keys_are_served(loose):
    """Two regions, strictKeys false: one region still on the old config serves foo unconfigured
    (2, 4, ...) while the other serves it from 1000 on: 1000 to 1008 twice, as the issue observed."""
    message = refusal(loose, strictKeys=False, counters=counters(foo={"start": 1000}))
    assert message.startswith("counters.foo: a new counter with start 1000, stride 1, shards 1, but a recorded ")
    assert "served keys nobody configured (strictKeys false)" in message
    assert "`.venv/bin/python -m tickets_admin raise foo --above N`" in message
    assert "`.venv/bin/python -m tickets_admin fence` stops the unconfigured lanes of foo in every region" in message
    assert "`make deploy FENCE=1`" in message


@pytest.mark.parametrize("layout", [{"shards": 4}, {"stride": 10}, {"start": 2}])
def test_any_other_layout_for_a_new_counter_is_refused_while_unconfigured_keys_are_served(loose, layout):
    assert refusal(loose, counters=counters(bar=layout)).startswith("counters.bar: a new counter")


def test_a_new_counter_with_the_unconfigured_layout_is_accepted_with_its_own_max(loose):
    ledger = record(config(counters=counters(foo={"start": 1, "max": 500, "maxBlock": 10})), loose)
    assert ledger.counters["foo"] == UNCONFIGURED


def test_turning_strict_keys_on_later_does_not_unlock_the_layout(loose):
    """A region may still run the version that served unconfigured keys."""
    strict = record(config(), loose)
    assert strict.unconfigured_keys_served
    assert refusal(strict, counters=counters(foo={"start": 1000})).startswith("counters.foo:")


def test_strict_keys_from_the_start_lets_a_new_counter_choose_its_layout(deployed):
    ledger = record(config(counters=counters(foo={"start": 1000, "shards": 3})), deployed)
    assert ledger.counters["foo"] == CounterRecord(start=1000, stride=1, shards=3)


def test_the_default_key_is_served_unconfigured_even_with_strict_keys(deployed):
    message = refusal(deployed, counters=counters(default={"start": 1000}))
    assert "default was the defaultKey of a recorded version that did not configure it" in message
    # A key that became the default only once configured was never served unconfigured.
    moved = record(config(defaultKey="orders"), deployed)
    assert moved.default_keys_served == {"default"}
    assert record(config(defaultKey="orders", counters=counters(members={"start": 7})), moved)


def test_switching_strict_keys_off_locks_the_layout_from_then_on(deployed):
    loose = record(config(strictKeys=False), deployed)
    assert loose.unconfigured_keys_served
    assert refusal(loose, counters=counters(foo={"stride": 3})).startswith("counters.foo:")


# --- accounts -----------------------------------------------------------------------------------


def test_accounts_are_recorded_per_region_and_a_new_one_is_reported(deployed):
    production = record(config(), deployed, "111111111111")
    assert production.slots[0].accounts == ("111111111111",) and production.slots[1].accounts == ("111111111111",)
    assert new_accounts(deployed, production) == [("us-east-1", "111111111111"), ("eu-west-1", "111111111111")]
    staging = record(config(regions={"us-east-1": 0}), production, "222222222222")
    assert staging.slots[0].accounts == ("111111111111", "222222222222")
    assert staging.slots[1] == SlotRecord("eu-west-1", retired=True, accounts=("111111111111",))
    assert new_accounts(production, staging) == [("us-east-1", "222222222222")]
    assert new_accounts(staging, record(config(regions={"us-east-1": 0}), staging, "222222222222")) == []


def test_an_unknown_account_records_nothing(deployed):
    assert record(config(), deployed, None) == deployed


# --- the file -----------------------------------------------------------------------------------


def test_the_file_is_sorted_one_entry_a_line_and_round_trips(deployed, tmp_path):
    first = record_services(None, {"tickets-counters": config()}, "222222222222", "make init")
    ledger = record_services(
        first,
        {
            "tickets-counters": config(
                regions={"us-east-1": 0},
                strictKeys=True,
                counters=counters(big={"start": "36028797018963969", "stride": 7, "max": TOP}),
            )
        },
        "111111111111",
    )
    root, child = first.version, ledger.version
    assert child == version_id(root, ledger.services) and root == version_id(None, first.services)
    text = to_text(ledger)
    assert text == "\n".join(
        [
            "{",
            f'  "//": {json.dumps(COMMENT)},',
            '  "services": {',
            '    "tickets-counters": {',
            '      "counters": {',
            '        "big": {"shards": 1, "start": "36028797018963969", "stride": 7},',
            '        "invoices": {"shards": 1, "start": 1, "stride": 10},',
            '        "orders": {"shards": 2, "start": 5000, "stride": 1}',
            "      },",
            '      "defaultKeysServed": ["default"],',
            '      "deployed": {"counters": {"big": {"max": "9223372036854775807"}}, "strictKeys": true},',
            '      "regionSlots": 4,',
            '      "slots": {',
            '        "0": {"accounts": ["111111111111", "222222222222"], "region": "us-east-1"},',
            '        "1": {"accounts": ["222222222222"], "region": "eu-west-1", "retired": true}',
            "      },",
            '      "unconfiguredKeysServed": false',
            "    }",
            "  },",
            '  "versions": [',
            f'    {{"id": "{root}", "parent": null, "change": "make init"}},',
            f'    {{"id": "{child}", "parent": "{root}", "change": "tickets-counters: counters big added; '
            "us-east-1 account 111111111111; eu-west-1 retired from slot 1; deployed counters.big.max "
            '9223372036854775807"}',
            "  ]",
            "}",
            "",
        ]
    )
    assert json.loads(text)["services"]["tickets-counters"]["counters"]["big"]["start"] == "36028797018963969"
    path = tmp_path / "tickets.lock.json"
    write_ledger_file(path, ledger)
    assert path.read_text() == text
    assert read_ledger_file(path) == ledger
    assert read_ledger(path) == ledger.services["tickets-counters"]
    assert [p.name for p in tmp_path.iterdir()] == ["tickets.lock.json"]  # no temporary file left


def test_slots_sort_as_numbers():
    regions = {"us-west-2": 10, "us-east-2": 2, "us-east-1": 1}
    ledger = record(parse_config({"regions": regions, "regionSlots": 11}), None)
    assert list(json.loads(to_text(one_service(ledger)))["services"]["tickets-counters"]["slots"]) == ["1", "2", "10"]


def test_an_empty_counters_object_stays_on_one_line():
    assert '      "counters": {},\n' in to_text(one_service(record(parse_config({"regions": {"us-east-1": 0}}), None)))


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"regionSlots": 1}',
        *(
            '{"services": {"t": {"regionSlots": 1, "defaultKeysServed": [], "unconfiguredKeysServed": true, '
            + service
            + '}}, "versions": []}'
            for service in [
                '"slots": {"1": {"region": "us-east-1"}}, "counters": {}',
                '"slots": {"0": {"region": "x", "retired": false}}, "counters": {}',
                '"slots": {}, "counters": {"a": {"start": 1, "stride": 0, "shards": 1}}',
                '"slots": {}, "counters": {"a": {"start": 1.5, "stride": 1, "shards": 1}}',
                '"slots": {}, "counters": {}, "extra": 1',
            ]
        ),
    ],
)
def test_a_damaged_ledger_is_refused_with_the_way_back(tmp_path, text):
    path = tmp_path / "tickets.lock.json"
    path.write_text(text)
    with pytest.raises(LedgerError, match=r"not a Tickets ledger .*git checkout -- tickets\.lock\.json"):
        read_ledger(path)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda service: service.update(extra=1), "extra: not a field of a service"),
        (lambda service: service.pop("defaultKeysServed"), "defaultKeysServed: missing"),
        (lambda service: service.update(unconfiguredKeysServed="yes"), "unconfiguredKeysServed: not as the ledger"),
    ],
)
def test_a_service_is_read_only_as_the_ledger_writes_it_naming_the_field(tmp_path, change, said):
    path = tmp_path / "tickets.lock.json"
    init_ledger_file(path, {"tickets-counters": config()})
    raw = json.loads(path.read_text())
    change(raw["services"]["tickets-counters"])
    path.write_text(json.dumps(raw))
    with pytest.raises(LedgerError, match=f"not a Tickets ledger \\({said}"):
        read_ledger(path)


# --- versions: one line of history --------------------------------------------------------------


@pytest.fixture
def main_file() -> LedgerFile:
    return on(MAIN, None, "make init")


def test_each_change_appends_a_version_naming_its_parent_and_nothing_new_returns_the_same_file(main_file):
    assert main_file.versions == (Version(main_file.version, None, "make init"),)
    assert on(MAIN, main_file) is main_file
    grown = on(PR_B, main_file)
    assert [v.parent for v in grown.versions] == [None, main_file.version]
    assert grown.versions[-1].change == "tickets-counters: counters foo added"
    assert grown.is_ancestor(main_file.version, grown.version) and grown.is_ancestor(grown.version, grown.version)
    assert not grown.is_ancestor(grown.version, main_file.version)
    assert not grown.is_ancestor("0123456789abcdef", grown.version)


def test_a_state_reached_again_is_a_new_version():
    """A region removed and brought back to its slot returns to the same services, not the same version."""
    both = {**MAIN, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    first = on(both)
    removed = on({**both, "regions": {"us-east-1": 0}}, first)
    back = on(both, removed)
    assert back.services == first.services and back.version != first.version
    assert len({v.id for v in back.versions}) == 3


def test_a_hand_edited_ledger_is_refused(main_file, tmp_path):
    path = tmp_path / "tickets.lock.json"
    path.write_text(to_text(main_file).replace('"start": 5000', '"start": 6000'))
    with pytest.raises(LedgerError, match="edited by hand or merged line by line"):
        read_ledger_file(path)


def test_a_history_cut_at_its_start_is_refused(main_file, tmp_path):
    grown = on(PR_B, main_file)
    cut = LedgerFile(grown.services, grown.versions[1:])
    path = tmp_path / "tickets.lock.json"
    write_ledger_file(path, cut)
    with pytest.raises(LedgerError, match="names a parent .* its history was cut"):
        read_ledger_file(path)


def test_services_are_recorded_apart_and_kept_when_not_declared(main_file):
    other = {"regions": {"eu-west-1": 0}, "tableName": "other-counters", "counters": {"x": {"start": 1}}}
    both = record_services(main_file, {"other-counters": parse_config(other)})
    assert set(both.services) == {"tickets-counters", "other-counters"}
    assert both.services["tickets-counters"] == main_file.services["tickets-counters"]
    with pytest.raises(LedgerError) as refused:
        record_services(
            both,
            {
                "tickets-counters": parse_config({**MAIN, "regionSlots": 2}),
                "other-counters": parse_config({**other, "counters": {"x": {"start": 2}}}),
            },
        )
    lines = str(refused.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["other-counters", "tickets-counters"]
    assert "counters.x.start: the ledger records 1, cdk.json says 2." in lines[0]
    assert "regionSlots: the ledger records 1, cdk.json says 2." in lines[1]


def test_a_renamed_table_is_refused_as_a_new_empty_table(main_file):
    with pytest.raises(LedgerError, match=r"renamed: tableName: the ledger records 'tickets-counters' in us-east-1"):
        record_services(main_file, {"renamed": parse_config({**MAIN, "tableName": "renamed"})})


def test_new_accounts_across_services(main_file):
    other = {"regions": {"eu-west-1": 0}, "tableName": "other-counters"}
    both = record_services(main_file, {"other-counters": parse_config(other)}, "111111111111")
    assert new_accounts(main_file, both) == [("eu-west-1", "111111111111")]


# --- make init ----------------------------------------------------------------------------------


def _cdk_json(directory: Path, tickets: dict) -> Path:
    path = directory / "cdk.json"
    path.write_text(json.dumps({"app": "python3 app.py", "context": {"tickets": tickets}}))
    return path


def test_init_writes_the_ledger_once_and_replaces_it_only_while_it_records_no_deployment(tmp_path):
    """init_ledger_file, the one implementation of init (python -m tickets_cdk init, tests/synth/test_cdk_lib.py):
    a ledger never synthesised for an account (every deploy is) may start over with --force, and says so."""
    config = load_config_file(_cdk_json(tmp_path, {"regions": {"us-east-1": 0}, "strictKeys": True}))
    path = tmp_path / "tickets.lock.json"
    init_ledger_file(path, {config.table_name: config})
    written = path.read_bytes()
    assert read_ledger(path) == record(config, None)
    with pytest.raises(LedgerError, match="a ledger exists already. It records no deployment") as refused:
        init_ledger_file(path, {config.table_name: config})
    assert "make init FORCE=1" in str(refused.value) and "python -m tickets_cdk init --force" in str(refused.value)
    assert path.read_bytes() == written
    wider = replace(config, region_slots=4)
    init_ledger_file(path, {config.table_name: wider}, replace_undeployed=True)
    assert read_ledger(path).region_slots == 4
    write_ledger_file(path, record_services(read_ledger_file(path), {config.table_name: wider}, "111111111111"))
    deployed_text = path.read_bytes()
    with pytest.raises(LedgerError, match=r"never replaced .* records a deployment \(us-east-1 in 111111111111\)"):
        init_ledger_file(path, {config.table_name: config}, replace_undeployed=True)
    assert path.read_bytes() == deployed_text


def test_the_first_record_of_a_one_way_choice_says_it_is_one_way(deployed):
    loose = record(config(strictKeys=False, regions={"us-east-1": 0}), None)
    assert one_way_choices(None, loose) == [
        "tickets-counters: slot 0 is us-east-1's for good (a removed region keeps it: its retained table holds the "
        "slot's numbers)",
        "tickets-counters: strictKeys false is recorded for good: a counter configured later keeps the layout of "
        "unconfigured keys unless fenced, even after strictKeys true (docs/how-to/add-a-counter.md)",
    ]
    assert one_way_choices(loose, record(config(strictKeys=False, regions={"us-east-1": 0}), loose)) == []  # once
    assert one_way_choices(deployed, record(config(), deployed, "111111111111")) == []
    two = record(config(regions={"us-east-1": 0, "eu-west-1": 1, "eu-central-1": 2}), deployed)
    assert [said.split(" (")[0] for said in one_way_choices(deployed, two)] == [
        "tickets-counters: slot 2 is eu-central-1's for good"
    ]
    file = one_service(two)
    assert one_way_choices(one_service(deployed), file) == one_way_choices(deployed, two)


def test_python_m_tickets_deploy_init_names_the_one_init_and_writes_nothing(tmp_path, capsys):
    from tickets_deploy.__main__ import main

    _cdk_json(tmp_path, {"regions": {"us-east-1": 0}})
    assert main(["init", "--config", str(tmp_path / "cdk.json")]) == 2
    assert "python -m tickets_cdk init" in capsys.readouterr().err
    assert not (tmp_path / "tickets.lock.json").exists()


# --- the deployed settings (tickets_deploy/ledger/model.py) ---------------------------------------

FIXTURES = ROOT / "tests" / "fixtures" / "ledgers"


def test_an_older_ledger_gets_its_deployed_settings_as_one_version_only_when_synthesis_upgrades_it():
    old = read_ledger_file(FIXTURES / "format-2-two-services.json")
    assert all(service.deployed is None for service in old.services.values())
    configs = {
        "shop-invoice-numbers": parse_config(
            {
                "tableName": "shop-invoice-numbers",
                "regions": {"eu-west-1": 0},
                "strictKeys": True,
                "counters": {"credit-notes": {"maxBlock": 10}, "invoices-2026": {}},
            }
        ),
        "shop-order-numbers": parse_config(
            {
                "tableName": "shop-order-numbers",
                "regions": {"eu-west-1": 0, "us-east-1": 1},
                "regionSlots": 2,
                "strictKeys": True,
                "counters": {"orders": {"start": 5000}},
            }
        ),
    }
    assert record_services(old, configs) is old  # a check leaves it byte for byte as it was
    upgraded = record_services(old, configs, upgrade=True)
    assert upgraded.versions[:-1] == old.versions
    assert upgraded.versions[-1].change == (
        "shop-invoice-numbers: deployed counters.credit-notes.maxBlock 10, strictKeys true; "
        "shop-order-numbers: deployed strictKeys true"
    )
    assert to_text(upgraded) == (ROOT / "examples" / "cdk-app" / "tickets.lock.json").read_text()
    for name, service_config in configs.items():  # what tickets_admin --service operates with
        assert config_from_ledger(upgraded.services[name], "ledger") == service_config
    assert record_services(upgraded, configs, upgrade=True) is upgraded


def test_the_config_built_from_the_ledger_is_the_deployed_one_in_every_recorded_field(deployed):
    changed = config(
        defaultKey="orders",
        maxBlock=50,
        compat={"path": "counter"},
        counters=counters(orders={"start": 5000, "shards": 2, "max": TOP, "maxBlock": 7}),
    )
    assert config_from_ledger(record(changed, deployed), "ledger") == changed
    with pytest.raises(LedgerError, match="written before it recorded the deployed settings.*--config"):
        config_from_ledger(replace(deployed, deployed=None), "ledger")


# --- a fence begun and not recorded (tickets_admin fence; tickets_deploy/ledger/rules.py) -------------------------


def pending(deployed: Ledger) -> tuple[Ledger, PendingFence]:
    """`deployed` with a fence of orders from 2 shards to 4 begun: what fence writes before it stops any lane."""
    (change,) = layout_changes(config(counters=counters(orders={"start": 5000, "shards": 4})), deployed)
    fence = PendingFence("0123456789abcdef", (change,))
    return replace(deployed, fencing=fence), fence


def test_a_pending_fence_is_written_on_one_line_hashed_and_read_back(deployed):
    ledger, fence = pending(deployed)
    file = LedgerFile({"tickets-counters": ledger}, ())
    file = replace(file, versions=(Version(version_id(None, file.services), None, "fence begun"),))
    text = to_text(file)
    assert (
        '      "fencing": {"id": "0123456789abcdef", "keys": {"orders": {"epoch": 1, "from": {"regionSlots": 4, '
        '"shards": 2, "start": 5000, "stride": 1}, "to": {"regionSlots": 4, "shards": 4, "start": 5000, '
        '"stride": 1}}}},'
    ) in text.splitlines()
    assert from_text(text) == file
    assert version_id(None, file.services) != version_id(None, {"tickets-counters": deployed})  # part of the hash


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda raw: raw.update(id="XYZ"), "fencing.id: not 16 hex digits"),
        (lambda raw: raw["keys"]["orders"].update(epoch=2), "fencing.keys.orders.epoch: not the epoch after the last"),
        (lambda raw: raw.update(keys={}), "fencing.keys: empty"),
    ],
)
def test_a_damaged_pending_fence_is_refused(deployed, edit, said):
    ledger, _ = pending(deployed)
    raw = json.loads(to_text(LedgerFile({"tickets-counters": ledger}, ())))
    edit(raw["services"]["tickets-counters"]["fencing"])
    with pytest.raises(ValueError, match=said):
        from_text(json.dumps(raw))


def test_while_a_fence_is_pending_every_config_is_refused_naming_both_ways_out(deployed):
    """A fence begun and not finished has stopped lanes somewhere: neither the old layout (its lanes answer 503) nor
    the new one (no epoch recorded yet) has a serving lane, so synthesis accepts nothing until fence finishes it or
    --undo puts the lanes back."""
    ledger, fence = pending(deployed)
    for tickets in (config(), config(counters=counters(orders={"start": 5000, "shards": 4}))):
        with pytest.raises(LedgerError) as refused:
            record(tickets, ledger)
        said = str(refused.value)
        assert said.startswith(
            f"fencing: `.venv/bin/python -m tickets_admin fence` began fence {fence.id} (orders to epoch 1"
        )
        assert (
            "run `.venv/bin/python -m tickets_admin fence`" in said
            and "`.venv/bin/python -m tickets_admin fence --undo`" in said
        )
    assert record_epochs(ledger, []).fencing is None  # recording the epochs ends it


# --- a series whose ids lack {series}: refused when it would be recorded, not when regionSlots grows ------------

NO_SERIES_IN_ITS_IDS = {
    "regions": {"eu-west-1": 0},
    "tableName": "billing",
    "strictKeys": True,
    "series": {"invoices": {"start": 1, "format": "INV-{n:06}"}},
}
TWO_REGIONS = {"regions": {"eu-west-1": 0, "us-east-1": 1}, "regionSlots": 2}
# Written by the code before this rule (make init of NO_SERIES_IN_ITS_IDS): such a series, recorded.
RECORDED_BEFORE = ROOT / "tests" / "fixtures" / "ledgers" / "format-2-series-id-without-its-series.json"


def billing(tickets: dict, previous: LedgerFile | None = None) -> LedgerFile:
    return record_services(previous, {"billing": parse_config(tickets)})


def test_a_series_whose_ids_lack_their_series_is_refused_when_it_would_be_recorded():
    """One region, no period: the ids do not repeat yet, but the format is permanent once recorded, and a later
    regionSlots change would need {series}. Refused at the first ledger (make init) and when added to one, naming
    the format that would be accepted; with it, regionSlots may grow."""
    with pytest.raises(LedgerError) as refused:
        billing(NO_SERIES_IN_ITS_IDS)  # make init
    message = str(refused.value)
    assert "billing: series.invoices.format: 'INV-{n:06}' lacks {series}" in message
    assert (
        "regionSlots could never grow" in message and "e.g. 'INV-{series}-{n:06}' (first id 'INV-all-000001'" in message
    )
    ledger = billing({**NO_SERIES_IN_ITS_IDS, "series": {}})
    with pytest.raises(LedgerError, match=r"series\.receipts\.format: 'R{n}' lacks {series}"):
        billing({**NO_SERIES_IN_ITS_IDS, "series": {"receipts": {"format": "R{n}"}}}, ledger)
    proposed = {"invoices": {"start": 1, "format": "INV-{series}-{n:06}"}}
    ledger = billing({**NO_SERIES_IN_ITS_IDS, "series": proposed}, ledger)
    assert parse_config({**NO_SERIES_IN_ITS_IDS, **TWO_REGIONS, "series": proposed}).region_slots == 2
    assert billing({**NO_SERIES_IN_ITS_IDS, "series": {**proposed, "plain": {}}}, ledger)  # no format: no id


def test_a_ledger_that_recorded_such_a_series_accepts_it_and_says_honestly_that_regions_cannot_grow():
    """Existing ledgers keep their meaning: the series stays accepted as recorded. Growing regionSlots cannot be
    made safe (each region would issue INV-000001) and {series} cannot be added (a permanent field): the refusal
    says there is no way out instead of proposing the change the ledger refuses."""
    ledger = read_ledger_file(RECORDED_BEFORE)
    assert billing(NO_SERIES_IN_ITS_IDS, ledger) is ledger
    with pytest.raises(ConfigError) as grown:
        parse_config({**NO_SERIES_IN_ITS_IDS, **TWO_REGIONS})
    assert "there is no way out" in str(grown.value) and "Keep regionSlots 1 while it is configured" in str(grown.value)
    with pytest.raises(LedgerError, match=r"series\.invoices\.format: the ledger records 'INV-\{n:06\}'"):
        billing({**NO_SERIES_IN_ITS_IDS, "series": {"invoices": {"start": 1, "format": "INV-{series}-{n:06}"}}}, ledger)


def test_no_file_is_refused_in_short_lines_naming_both_inits_and_the_way_back(tmp_path):
    with pytest.raises(LedgerError) as missing:
        read_ledger(tmp_path / "tickets.lock.json")
    lines = str(missing.value).splitlines()
    assert lines[0] == f"{tmp_path / 'tickets.lock.json'}: no ledger."
    assert max(len(line) for line in lines[1:]) <= 100
    commands = [line.split()[:4] for line in lines if line.startswith("  ")]
    assert ["make", "init", "in", "a"] in commands  # this repository's
    assert ["python", "-m", "tickets_cdk", "init"] in commands  # an app of one's own
    assert "  git checkout -- tickets.lock.json" in lines
