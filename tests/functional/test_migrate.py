"""`python -m tickets_admin migrate` on moto: an old API Gateway counter table (partition key `systemKey`, a
string; value `counter`, a number) carried over under the real handler: raised above old value +
margin, already above, dry run, safe to repeat, skipped items listed, refusals, errors, --help.
(On moto's server, dynalite and DynamoDB Local: tests/functional/test_engines.py; the whole move with the
compatibility route: tests/functional/test_compat.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common import EXAMPLE_CONFIG
from local_support import write_cdk_json
from moto_deployment import COUNTER_TABLE
from tickets_admin.__main__ import main
from tickets_admin.commands.migrate import read_old_counters

REPO = Path(__file__).resolve().parents[2]
OLD_TABLE = "old-counters"
SHARDED = {"regions": {"us-east-1": 0}, "counters": {"hot": {"shards": 4}}}


def create_old_table(client, values: dict[str, int]) -> None:
    """The old pattern's table: one item per counter, `systemKey` -> `counter`."""
    client.create_table(
        TableName=OLD_TABLE,
        KeySchema=[{"AttributeName": "systemKey", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "systemKey", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for key, value in values.items():
        client.put_item(TableName=OLD_TABLE, Item={"systemKey": {"S": key}, "counter": {"N": str(value)}})


@pytest.fixture
def migrate(tmp_path):
    """migrate(tickets, *args) runs `python -m tickets_admin migrate` in-process on moto; (status, stdout
    lines, stderr)."""

    def run(tickets: dict, *args: str) -> tuple[int, list[str], str]:
        config = write_cdk_json(tmp_path, tickets)
        command = ["migrate", "--from-table", OLD_TABLE, "--key-attribute", "systemKey"]
        command += ["--value-attribute", "counter", "--config", str(config), "--table", COUNTER_TABLE, *args]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(command)
        return status, out.getvalue().splitlines(), err.getvalue()

    return run


def counter_items(region) -> list[dict]:
    return [item for item in region.items() if not item["counter"]["S"].startswith("_")]


def records(region) -> dict[str, dict[str, str]]:
    """The records migrate keeps in the Tickets table, by item name, without their time."""
    return {
        item["counter"]["S"]: {
            name: value.get("N", value.get("S")) for name, value in item.items() if name not in ("counter", "at")
        }
        for item in region.items()
        if item["counter"]["S"].startswith("_")
    }


def old_callers_take(client, key: str, until: int) -> None:
    """The old pattern's callers, still on the old table: its counter goes on to `until`."""
    client.put_item(TableName=OLD_TABLE, Item={"systemKey": {"S": key}, "counter": {"N": str(until)}})


def tickets_of(answer) -> list[int]:
    assert answer.status == 200, answer.body
    return answer.body.get("tickets", [answer.body["ticket"]])


def test_each_key_is_raised_above_its_old_value_plus_the_margin(api, migrate):
    assert tickets_of(api.get("/orders")) == [5000]
    create_old_table(api.client, {"orders": 7000, "invoices": 1234, "fresh": 41})
    status, out, err = migrate(EXAMPLE_CONFIG, "--margin", "100")
    assert (status, err) == (0, "")
    assert out == [
        "migrating table old-counters (systemKey -> counter) into table tickets-test in us-east-1 (slot 0 of 1), "
        "margin 100",
        "fresh: raised above 141 (old value 41 + margin 100): fresh (lane 0): unused -> last 141; next ticket 142",
        # invoices: 1, 11, 21, ...: the smallest above 1334 is 1341
        "invoices: raised above 1334 (old value 1234 + margin 100): invoices (lane 0): unused -> last 1331; "
        "next ticket 1341",
        "orders: raised above 7100 (old value 7000 + margin 100): orders (lane 0): last 5000 -> last 7100; "
        "next ticket 7101",
        "3 key(s): 3 raised, 0 already above, 0 not migrated; 0 item(s) skipped",
    ]
    assert tickets_of(api.get("/orders")) == [7101]
    assert tickets_of(api.get("/invoices")) == [1341]
    assert tickets_of(api.get("/fresh")) == [142]


def test_a_second_run_raises_nothing(api, migrate):
    create_old_table(api.client, {"orders": 7000, "fresh": 41})
    assert migrate(EXAMPLE_CONFIG, "--margin", "100")[0] == 0
    before = api.items()
    status, out, _ = migrate(EXAMPLE_CONFIG, "--margin", "100")
    assert status == 0
    assert out[1:] == [
        "fresh: already above 141 (old value 41 + margin 100): fresh (lane 0): already above: last 141, "
        "next ticket 142",
        "orders: already above 7100 (old value 7000 + margin 100): orders (lane 0): already above: last 7100, "
        "next ticket 7101",
        "2 key(s): 0 raised, 2 already above, 0 not migrated; 0 item(s) skipped",
    ]
    assert api.items() == before


def test_a_counter_already_above_is_left_alone(api, migrate):
    tickets_of(api.get("/orders", query={"count": "5"}))  # up to 5004
    create_old_table(api.client, {"orders": 10})
    before = api.items()
    status, out, _ = migrate(EXAMPLE_CONFIG, "--margin", "1000")
    assert status == 0
    assert out[1] == (
        "orders: already above 1010 (old value 10 + margin 1000): orders (lane 0): already above: last 5004, "
        "next ticket 5005"
    )
    assert counter_items(api) == before
    assert records(api)["_migration#orders"] == {"target": "1010", "oldValue": "10", "margin": "1000"}


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(api, migrate):
    tickets_of(api.get("/orders"))
    create_old_table(api.client, {"orders": 7000, "fresh": 41})
    before = api.items()
    status, out, _ = migrate(EXAMPLE_CONFIG, "--margin", "100", "--dry-run")
    assert status == 0
    assert out == [
        "migrating table old-counters (systemKey -> counter) into table tickets-test in us-east-1 (slot 0 of 1), "
        "margin 100: dry run, nothing is written",
        "fresh: would raise above 141 (old value 41 + margin 100): fresh (lane 0): unused -> last 141; next ticket 142",
        "orders: would raise above 7100 (old value 7000 + margin 100): orders (lane 0): last 5000 -> last 7100; "
        "next ticket 7101",
        "2 key(s): 2 would raise, 0 already above, 0 not migrated; 0 item(s) skipped; dry run: nothing was written",
    ]
    assert api.items() == before


def test_every_lane_of_a_sharded_key_is_raised(deploy, migrate):
    region = deploy(SHARDED)
    create_old_table(region.client, {"hot": 500})
    status, out, _ = migrate(SHARDED)
    assert status == 0
    assert out[1].startswith("hot: raised above 500 (old value 500 + margin 0): hot: recorded the layout")
    for shard in range(4):  # lane l issues 1 + l, 5 + l, ...: the smallest above 500 is 501 + l
        assert f"hot#{shard} (lane {shard}): unused -> last {497 + shard}; next ticket {501 + shard}" in out[1]
    issued = [ticket for _ in range(8) for ticket in tickets_of(region.get("/hot"))]
    assert min(issued) > 500 and len(set(issued)) == 8


def test_items_that_name_no_key_or_no_whole_number_are_listed_and_the_rest_migrated(api, migrate):
    create_old_table(api.client, {"orders": 7000})
    for item in (
        {"systemKey": {"S": "has space"}, "counter": {"N": "3"}},
        {"systemKey": {"S": "_private"}, "counter": {"N": "3"}},
        {"systemKey": {"S": "no-value"}},
        {"systemKey": {"S": "fraction"}, "counter": {"N": "12.5"}},
        {"systemKey": {"S": "negative"}, "counter": {"N": "-4"}},
        {"systemKey": {"S": "text"}, "counter": {"S": "12"}},
    ):
        api.client.put_item(TableName=OLD_TABLE, Item=item)
    status, out, _ = migrate(EXAMPLE_CONFIG)
    assert status == 1
    assert out[1].startswith("orders: raised above 7000")
    assert sorted(out[2:-1]) == [
        'skipped systemKey {"S": "_private"}: not a valid key (a string of 1-100 characters from A-Z a-z 0-9 . _ : -, '
        "the first one a letter or digit)",
        'skipped systemKey {"S": "fraction"}: its counter is {"N": "12.5"}, not a whole number (0 or more)',
        'skipped systemKey {"S": "has space"}: not a valid key (a string of 1-100 characters from A-Z a-z 0-9 . _ : '
        "-, the first one a letter or digit)",
        'skipped systemKey {"S": "negative"}: its counter is {"N": "-4"}, not a whole number (0 or more)',
        'skipped systemKey {"S": "no-value"}: its counter is missing, not a whole number (0 or more)',
        'skipped systemKey {"S": "text"}: its counter is {"S": "12"}, not a whole number (0 or more)',
    ]
    assert out[-1] == "1 key(s): 1 raised, 0 already above, 0 not migrated; 6 item(s) skipped"
    assert tickets_of(api.get("/orders")) == [7001]


def test_reading_the_old_items():
    """A key named twice takes the larger value; a key that is no string, or a missing key attribute, is
    skipped; numbers are read exactly, however DynamoDB writes them."""
    old = read_old_counters(
        [
            {"name": {"S": "a"}, "v": {"N": "5"}},
            {"name": {"S": "a"}, "v": {"N": "9"}},
            {"name": {"S": "a"}, "v": {"N": "7"}},
            {"name": {"S": "big"}, "v": {"N": "36028797018963969"}},
            {"name": {"S": "exp"}, "v": {"N": "1E+3"}},
            {"name": {"N": "12"}, "v": {"N": "1"}},
            {"id": {"S": "x"}, "v": {"N": "1"}},
        ],
        "name",
        "v",
    )
    assert old.values == {"a": 9, "big": 36028797018963969, "exp": 1000}
    assert old.skipped[0].startswith('skipped name {"N": "12"}: not a valid key')
    assert old.skipped[1].startswith('skipped an item without name: {"id": {"S": "x"}, "v": {"N": "1"}}: not a valid')


def test_a_key_the_service_does_not_serve_or_past_max_is_not_migrated_and_the_rest_is(deploy, migrate):
    config = {**EXAMPLE_CONFIG, "strictKeys": True, "counters": {"small": {"max": 100}, "orders": {}}}
    region = deploy(config)
    create_old_table(region.client, {"small": 100, "stranger": 5, "orders": 10})
    status, out, _ = migrate(config)
    assert status == 1
    assert out[1:] == [
        "orders: raised above 10 (old value 10 + margin 0): orders (lane 0): unused -> last 10; next ticket 11",
        "small: NOT MIGRATED: not raised above 100 (old value 100 + margin 0): small: the lane's next ticket "
        "above 100 would be 101, past the counter's max (100); raise max in cdk.json and deploy first. "
        "Nothing was written.",
        "stranger: NOT MIGRATED: strictKeys is on and cdk.json does not configure 'stranger': add it to "
        "tickets.counters there, then migrate again",
        "3 key(s): 1 raised, 0 already above, 2 not migrated; 0 item(s) skipped",
    ]
    assert tickets_of(region.get("/orders")) == [11]


def test_a_missing_old_table_names_the_option(api, migrate):
    status, out, err = migrate(EXAMPLE_CONFIG)
    assert status == 1 and len(out) == 1
    assert err == (
        "error: no table 'old-counters' in us-east-1: check --from-table and --from-region "
        "(default: --region, the first region in cdk.json)\n"
    )


def test_help_says_what_it_prints_the_exit_status_and_the_safe_order():
    result = subprocess.run(
        [sys.executable, "-m", "tickets_admin", "migrate", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    for text in (
        "--from-table NAME",
        "--key-attribute A",
        "--value-attribute V",
        "--margin M",
        "--dry-run",
        "--verify",
        "--from-region REGION",
        "_migration#KEY",
        "OVERLAP",
        "migrate --verify",
        "--region",
        "--endpoint-url",
        "--table",
        "--config",
        "already above",
        "would raise",
        "skipped",
        "NOT MIGRATED",
        "Exit status 0",
        "safe to repeat",
        "migrate again",
        "examples:",
    ):
        assert text in result.stdout, (text, result.stdout)


# --- what the first run recorded, checked by later runs and --verify ------------------------------


def test_the_first_run_records_each_keys_target_where_export_and_the_service_do_not_see_a_counter(
    api, migrate, tmp_path
):
    create_old_table(api.client, {"legacy": 10})
    assert migrate(EXAMPLE_CONFIG, "--margin", "100")[0] == 0
    assert records(api) == {
        "_migration": {"fromTable": OLD_TABLE, "fromRegion": "us-east-1"},
        "_migration#legacy": {"target": "110", "oldValue": "10", "margin": "100"},
    }
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert (
            main(["export", "--config", str(write_cdk_json(tmp_path, EXAMPLE_CONFIG)), "--table", COUNTER_TABLE]) == 0
        )
    assert [json.loads(line)["counter"] for line in out.getvalue().splitlines()] == ["legacy"]
    assert api.get("/_migration").status == 404  # the _ prefix is reserved: the service never reads a record
    # A second run with another margin keeps the first target: it is what Tickets' lanes were raised above.
    assert migrate(EXAMPLE_CONFIG, "--margin", "5000")[0] == 0
    assert records(api)["_migration#legacy"] == {"target": "110", "oldValue": "10", "margin": "100"}


def test_hole_2_old_callers_past_the_target_are_named_with_the_numbers_issued_twice(api, migrate):
    """Hole 2: a margin too small. Old callers and Tickets both issued 111 .. 149; the second run used to
    say "already above" and exit 0."""
    create_old_table(api.client, {"legacy": 10})
    assert migrate(EXAMPLE_CONFIG, "--margin", "100")[0] == 0  # Tickets' next legacy ticket is 111
    assert tickets_of(api.get("/legacy", query={"count": "39"})) == list(range(111, 150))
    old_callers_take(api.client, "legacy", 149)

    # --verify names the key and the numbers issued twice, and writes nothing.
    before = api.items()
    status, out, _ = migrate(EXAMPLE_CONFIG, "--verify")
    assert status == 1
    assert out[0] == (
        "verifying table old-counters (systemKey -> counter) against table tickets-test in us-east-1 (slot 0 of 1)"
    )
    assert re.fullmatch(
        r"legacy: OVERLAP: the old callers took 111 \.\. 149, above the target 110 \(old value 10 \+ margin 100, "
        r"recorded \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\); Tickets has issued 39 of those numbers in us-east-1 "
        r"\(111 \.\. 149\): each twice",
        out[1],
    ), out[1]
    assert out[-1] == (
        "1 key(s): 0 within their target, 1 overlapping it, 0 new since the first run, 0 not served; "
        "0 item(s) skipped; nothing was written"
    )
    assert api.items() == before


def test_hole_2_a_second_run_names_the_overlap_it_used_to_call_already_above(api, migrate):
    create_old_table(api.client, {"legacy": 10})
    assert migrate(EXAMPLE_CONFIG, "--margin", "100")[0] == 0
    assert tickets_of(api.get("/legacy", query={"count": "39"})) == list(range(111, 150))
    old_callers_take(api.client, "legacy", 149)
    status, out, _ = migrate(EXAMPLE_CONFIG, "--margin", "100")
    assert out[1].startswith("legacy: OVERLAP: the old callers took 111 .. 149, above the target 110"), out
    assert status == 1
    assert out[2].startswith("legacy: raised above 249 (old value 149 + margin 100)")
    assert out[-1] == (
        "1 key(s): 1 raised, 0 already above, 0 not migrated, 1 past their recorded target; 0 item(s) skipped"
    )
    assert tickets_of(api.get("/legacy")) == [250]


def test_verify_within_the_target_exits_0_and_writes_nothing(api, migrate):
    create_old_table(api.client, {"orders": 7000, "legacy": 10})
    assert migrate(EXAMPLE_CONFIG, "--margin", "100")[0] == 0
    old_callers_take(api.client, "legacy", 110)  # exactly the target: no number twice
    before = api.items()
    status, out, _ = migrate(EXAMPLE_CONFIG, "--verify")
    assert status == 0
    assert out[1].startswith("legacy: within its target: the old counter is at 110, the target 110 (old value 10")
    assert out[2].startswith("orders: within its target: the old counter is at 7000, the target 7100")
    assert api.items() == before


def test_keys_new_in_the_old_table_since_the_first_run_are_reported_then_raised(api, migrate):
    """Hole 2's second half: with strictKeys false, Tickets serves a key the old callers created after the
    first run from 1; --verify names it and the numbers both gave, a later run raises it."""
    create_old_table(api.client, {"orders": 7000})
    assert migrate(EXAMPLE_CONFIG, "--margin", "100")[0] == 0
    old_callers_take(api.client, "newkey", 5)
    assert tickets_of(api.get("/newkey", query={"count": "3"})) == [1, 2, 3]

    status, out, _ = migrate(EXAMPLE_CONFIG, "--verify")
    assert status == 1
    assert re.fullmatch(
        r"newkey: NEW in the old table since the first run \(\S+\), at 5, never migrated: Tickets has issued 3 of "
        r"the numbers up to it in us-east-1 \(1 \.\. 3\): each twice\. Run migrate \(without --verify\) to raise it",
        out[1],
    ), out[1]

    status, out, _ = migrate(EXAMPLE_CONFIG, "--margin", "100")
    assert status == 0
    assert re.match(r"newkey \(new in the old table since the first run, \S+\): raised above 105 ", out[1]), out[1]
    assert migrate(EXAMPLE_CONFIG, "--verify")[0] == 0
    assert tickets_of(api.get("/newkey")) == [106]


def test_verify_before_any_run_says_to_migrate_first(api, migrate):
    create_old_table(api.client, {"orders": 7000})
    status, out, _ = migrate(EXAMPLE_CONFIG, "--verify")
    assert status == 1
    assert out[1] == "no migrate run is recorded in table tickets-test: run migrate (without --verify) first"


def test_hole_3_a_second_region_reads_the_old_table_in_its_own_region(deploy, migrate):
    """Hole 3: an API Gateway counter lives in one region; each Tickets region is migrated from it."""
    config = {**EXAMPLE_CONFIG, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    first, second = deploy(config, "us-east-1"), deploy(config, "eu-west-1")
    create_old_table(first.client, {"orders": 7000})
    assert migrate(config, "--margin", "100")[0] == 0

    status, _, err = migrate(config, "--margin", "100", "--region", "eu-west-1")  # the old way
    assert status == 1 and "no table 'old-counters' in eu-west-1: check --from-table and --from-region" in err

    status, out, _ = migrate(config, "--margin", "100", "--region", "eu-west-1", "--from-region", "us-east-1")
    assert status == 0
    assert out[0].startswith(
        "migrating table old-counters in us-east-1 (systemKey -> counter) into table "
        "tickets-test in eu-west-1 (slot 1 of 2)"
    )
    assert tickets_of(second.get("/orders")) == [7101]  # orders in eu-west-1: 5001, 5003, ...: 7101 is next
    assert records(second)["_migration"] == {"fromTable": OLD_TABLE, "fromRegion": "us-east-1"}
    assert migrate(config, "--verify", "--region", "eu-west-1", "--from-region", "us-east-1")[0] == 0
