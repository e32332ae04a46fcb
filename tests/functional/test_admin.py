"""`python -m tickets_admin`: raise on moto under the real handler (single lane, shards, hand-made items,
never lowering, unused lanes, refusals), export, clear errors, --help; and against a moto server shared
with the local server, concurrently with issuing over HTTP, as `make serve ENDPOINT_URL=...` runs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from botocore.stub import Stubber

from common import EXAMPLE_CONFIG
from local_support import SerialMotoServer, call, write_cdk_json
from moto_deployment import COUNTER_KEY, COUNTER_TABLE, create_table_arguments
from moto_deployment import test_client as moto_client
from tickets.settings import CounterConfig
from tickets_admin.__main__ import main
from tickets_admin.commands.raise_lanes import Outcome, key_lanes, raise_key
from tickets_admin.table import AdminError, CounterTable
from tickets_deploy.rules import MAX_TICKET
from tickets_local.server import LocalServer

REPO = Path(__file__).resolve().parents[2]
SHARDED = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {"hot": {"start": 1000, "stride": 3, "shards": 4}, "orders": {"start": 5000}},
}
HOT_LANES, HOT_STEP = 8, 3 * 8


@pytest.fixture
def admin(tmp_path):
    """admin(tickets, *args) runs `python -m tickets_admin` in-process on moto's table of the tests;
    returns (exit status, stdout lines, stderr). Only the command's own output is captured (not with
    capsys: the handler, imported during a test, would keep writing its logs to capsys's stream after
    the test closed it)."""

    def run(tickets: dict, *args: str) -> tuple[int, list[str], str]:
        config = write_cdk_json(tmp_path, tickets)
        command, rest = args[0], list(args[1:])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([command, *rest, "--config", str(config), "--table", COUNTER_TABLE])
        return status, out.getvalue().splitlines(), err.getvalue()

    return run


def tickets_of(answer) -> list[int]:
    assert answer.status == 200, answer.body
    return answer.body.get("tickets", [answer.body["ticket"]])


def item(region, key: str) -> dict | None:
    return region.client.get_item(TableName=COUNTER_TABLE, Key={"counter": {"S": key}}, ConsistentRead=True).get("Item")


# --- raise: one lane ----------------------------------------------------------------------------


def test_raise_a_single_lane_above_n(api, admin):
    assert tickets_of(api.get("/orders", query={"count": "3"})) == [5000, 5001, 5002]
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "120000")
    assert status == 0
    assert out == [
        "raising orders above 120000 in us-east-1 (slot 0 of 1), table tickets-test: 1 lane(s)",
        "orders (lane 0): last 5002 -> last 120000; next ticket 120001",
    ]
    assert tickets_of(api.get("/orders", query={"count": "2"})) == [120001, 120002]


def test_raise_never_lowers_a_lane(api, admin):
    tickets_of(api.get("/orders", query={"count": "3"}))
    before = api.items()
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "5001")  # 5002 was issued
    assert status == 0
    assert out[1] == "orders (lane 0): already above: last 5002, next ticket 5003"
    assert api.items() == before
    assert tickets_of(api.get("/orders")) == [5003]


def test_raise_is_safe_to_repeat(api, admin):
    admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "9000")
    before = api.items()
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "9000")
    assert status == 0 and out[1] == "orders (lane 0): already above: last 9000, next ticket 9001"
    assert api.items() == before


def test_raise_lands_on_the_lane_of_a_strided_counter(api, admin):
    """invoices: 1, 11, 21, ...; the smallest ticket above 500 is 501, above 505 it is 511."""
    assert tickets_of(api.get("/invoices")) == [1]
    admin(EXAMPLE_CONFIG, "raise", "invoices", "--above", "505")
    assert tickets_of(api.get("/invoices", query={"count": "2"})) == [511, 521]


def test_raise_an_unused_lane_creates_its_item(api, admin):
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "fresh", "--above", "41")  # an unconfigured key: defaults
    assert status == 0 and out[1] == "fresh (lane 0): unused -> last 41; next ticket 42"
    assert item(api, "fresh") == {
        "counter": {"S": "fresh"},
        "last": {"N": "41"},
        "step": {"N": "1"},
        "first": {"N": "1"},
    }
    assert tickets_of(api.get("/fresh")) == [42]


def test_an_unused_lane_whose_first_ticket_is_above_n_is_left_unwritten(api, admin):
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "4000")
    assert status == 0 and out[1] == "orders (lane 0): already above: unused, next ticket 5000"
    assert api.items() == []
    assert tickets_of(api.get("/orders")) == [5000]


# --- raise: shards and regions -------------------------------------------------------------------


def hot_ticket(lane: int, n: int) -> int:
    return 1000 + 3 * (lane + HOT_LANES * n)


def smallest_above(lane: int, above: int) -> int:
    n = 0
    while hot_ticket(lane, n) <= above:
        n += 1
    return hot_ticket(lane, n)


def test_raise_every_shard_of_this_region_used_or_not(deploy, admin):
    east, west = deploy(SHARDED, "us-east-1"), deploy(SHARDED, "eu-west-1")
    for _ in range(3):
        tickets_of(east.get("/hot", query={"count": "2"}))  # some shards used (which ones: a random draw)
    tickets_of(west.get("/hot"))
    west_before = west.items()

    status, out, _ = admin(SHARDED, "raise", "hot", "--above", "2000")
    assert status == 0
    assert out[0] == "raising hot above 2000 in us-east-1 (slot 0 of 2), table tickets-test: 4 lane(s)"
    for shard in range(4):  # us-east-1 owns lanes 0-3
        next_ticket = smallest_above(shard, 2000)
        assert item(east, f"hot#{shard}")["last"] == {"N": str(next_ticket - HOT_STEP)}
        assert f"hot#{shard} (lane {shard}): " in "\n".join(out) and f"next ticket {next_ticket}" in "\n".join(out)
    # The key's layout on its plain item, as the service records it before any shard item is written.
    layout = item(east, "hot")
    assert (layout["step"], layout["shards"], layout["first"]) == ({"N": "24"}, {"N": "4"}, {"N": "1000"})
    assert "last" not in layout

    issued = [t for _ in range(12) for t in tickets_of(east.get("/hot"))]
    by_lane: dict[int, list[int]] = {}
    for ticket in issued:
        assert ticket > 2000
        by_lane.setdefault((ticket - 1000) // 3 % HOT_LANES, []).append(ticket)
    assert set(by_lane) <= {0, 1, 2, 3}
    for lane, tickets in by_lane.items():  # each lane continues exactly from its smallest ticket above 2000
        assert tickets == [smallest_above(lane, 2000) + HOT_STEP * n for n in range(len(tickets))]
    assert west.items() == west_before  # another region's table is not this command's business


def test_raise_in_another_region_uses_that_regions_slot(deploy, admin):
    west = deploy(SHARDED, "eu-west-1")
    status, out, _ = admin(SHARDED, "raise", "orders", "--above", "9000", "--region", "eu-west-1")
    assert status == 0
    # eu-west-1 is slot 1 of 2: orders' lane 1 issues 5001, 5003, ...; the smallest above 9000 is 9001.
    assert out[1] == "orders (lane 1): unused -> last 8999; next ticket 9001"
    assert tickets_of(west.get("/orders")) == [9001]


# --- raise: items the service did not write (typed by hand, left by 0.1.0) --------------------------


def test_a_hand_made_item_is_raised_and_given_its_step_and_first(api, admin):
    api.put_item({"counter": {"S": "orders"}, "last": {"N": "5041"}})  # the console workflow
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "6000")
    assert status == 0
    assert out[1] == "orders (lane 0): last 5041 -> last 6000, now a lane (first 5000, step 1); next ticket 6001"
    assert item(api, "orders") == {
        "counter": {"S": "orders"},
        "last": {"N": "6000"},
        "step": {"N": "1"},
        "first": {"N": "5000"},
    }
    assert tickets_of(api.get("/orders")) == [6001]


def test_refused_then_raised_above_n_then_issued_above_n(api, admin):
    """The service refuses an item it did not write, naming the command; that command makes it a lane."""
    unwritten = {"counter": {"S": "invoices"}, "last": {"N": "91"}, "step": {"N": "10"}}  # as 0.1.0 left it
    api.put_item(unwritten)
    refusal = api.get("/invoices")
    assert refusal.status == 409 and refusal.body["error"] == "config_mismatch"
    assert api.items() == [unwritten]
    command = refusal.body["message"].split("`")[1]
    assert command == ".venv/bin/python -m tickets_admin raise invoices --above 91"
    status, out, _ = admin(EXAMPLE_CONFIG, *command.split()[3:])
    assert (
        status == 0
        and out[1] == "invoices (lane 0): last 91 -> last 91, now a lane (first 1, step 10); next ticket 101"
    )
    assert tickets_of(api.get("/invoices", query={"count": "2"})) == [101, 111]


@pytest.mark.parametrize(
    "last, above, line",
    [
        (105, 500, "invoices (lane 0): last 105 -> last 491, now a lane (first 1, step 10); next ticket 501"),
        # above N and above its own last, which may be off the lane: whatever it issued is at most 1005
        (1005, 500, "invoices (lane 0): last 1005 -> last 1001, now a lane (first 1, step 10); next ticket 1011"),
        (-19, 0, "invoices (lane 0): last -19 -> last -9, now a lane (first 1, step 10); next ticket 1"),
    ],
)
def test_a_hand_made_item_off_its_lane_is_put_on_it_above_n_and_its_own_last(api, admin, last, above, line):
    api.put_item({"counter": {"S": "invoices"}, "last": {"N": str(last)}})  # invoices: 1, 11, 21, ...
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "invoices", "--above", str(above))
    assert status == 0 and out[1] == line
    next_ticket = int(line.rsplit(" ", 1)[1])
    assert tickets_of(api.get("/invoices")) == [next_ticket]


def test_a_hand_made_item_already_above_is_made_a_lane_where_it_stands(api, admin):
    api.put_item({"counter": {"S": "orders"}, "last": {"N": "7000"}})
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "6000")
    assert status == 0
    assert out[1] == "orders (lane 0): last 7000 -> last 7000, now a lane (first 5000, step 1); next ticket 7001"
    assert tickets_of(api.get("/orders")) == [7001]


@pytest.mark.parametrize(
    "unwritten, before",
    [
        ({"counter": {"S": "orders"}}, "unused"),  # nothing but the key
        ({"counter": {"S": "orders"}, "last": {"N": "5500"}, "first": {"N": "5000"}}, "last 5500"),  # no step
        ({"counter": {"S": "orders"}, "step": {"N": "1"}}, "unused"),  # a step and nothing else
    ],
    ids=["key-only", "first-no-step", "step-only"],
)
def test_every_item_the_service_refuses_as_not_written_by_code_is_made_a_lane(api, admin, unwritten, before):
    api.put_item(unwritten)
    assert api.get("/orders").body["error"] == "config_mismatch"
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "6000")
    assert status == 0
    assert out[1] == f"orders (lane 0): {before} -> last 6000, now a lane (first 5000, step 1); next ticket 6001"
    assert tickets_of(api.get("/orders")) == [6001]


def test_a_lane_item_edited_off_its_lane_is_refused_naming_raise_which_puts_it_back(api, admin):
    api.put_item({"counter": {"S": "invoices"}, "last": {"N": "95"}, "step": {"N": "10"}, "first": {"N": "1"}})
    refusal = api.get("/invoices")  # the advance writes (no condition sees a modulo), then refuses
    assert refusal.status == 409 and refusal.body["error"] == "config_mismatch" and "ticket" not in refusal.body
    command = refusal.body["message"].split("`")[1]
    assert command == ".venv/bin/python -m tickets_admin raise invoices --above 105"
    status, out, _ = admin(EXAMPLE_CONFIG, *command.split()[3:])
    assert status == 0 and out[1].endswith("-> last 101, now a lane (first 1, step 10); next ticket 111")
    assert tickets_of(api.get("/invoices")) == [111]


def test_a_last_that_is_not_a_whole_number_is_reported_not_changed(api, admin):
    api.put_item({"counter": {"S": "orders"}, "last": {"N": "12.5"}})
    before = api.items()
    status, out, _ = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "6000")
    assert status == 1
    assert out[1].startswith('orders (lane 0): NOT CHANGED: last {"N": "12.5"} is not a whole number')
    assert api.items() == before


def test_a_0_1_0_sharded_key_is_refused_then_raised_and_issues_above_n(deploy, admin):
    """A layout without first or stride and shard items without first, as 0.1.0 wrote them: the service
    refuses (completing the layout from today's config could repeat tickets); raise completes it from
    the config the operator names and puts every shard of the region above N."""
    config = {"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 4}}}
    api = deploy(config)
    legacy = [
        {"counter": {"S": "hot"}, "shards": {"N": "4"}, "step": {"N": "4"}},
        {"counter": {"S": "hot#0"}, "last": {"N": "9"}, "step": {"N": "4"}},  # issued 1, 5, 9
        {"counter": {"S": "hot#2"}, "last": {"N": "15"}, "step": {"N": "4"}},  # issued 3, 7, 11, 15
    ]
    for unwritten in legacy:
        api.put_item(unwritten)
    refusals = [api.get("/hot") for _ in range(4)]
    assert {answer.body["error"] for answer in refusals} == {"config_mismatch"}
    assert api.items() == legacy
    status, out, _ = admin(config, "raise", "hot", "--above", "15")
    assert status == 0 and out[1] == "hot: recorded the layout (step 4, 4 shards)"
    issued = [t for _ in range(8) for t in tickets_of(api.get("/hot"))]
    assert len(set(issued)) == 8 and min(issued) > 15


# --- raise: the service writing between raise's read and its write -------------------------------


def orders_lanes():
    return key_lanes("orders", CounterConfig(start=5000), region_slot=0, region_slots=1, ledger=None)


def test_a_lane_the_service_moves_past_the_target_meanwhile_is_left_alone(api):
    tickets_of(api.get("/orders"))
    table, lines = CounterTable(COUNTER_TABLE, "us-east-1"), []
    write = table.write

    def service_first(item_key, request):
        for _ in range(5):
            tickets_of(api.get("/orders", query={"count": "1000"}))  # last: 5000 -> 10000, past the target
        table.write = write
        return write(item_key, request)

    table.write = service_first
    assert raise_key(table, orders_lanes(), 9000, report=lines.append) == [Outcome.MOVED_PAST]
    assert lines == ["orders (lane 0): moved past the target meanwhile (last 10000); left alone"]
    assert tickets_of(api.get("/orders")) == [10001]  # not lowered to 9000


def test_a_lane_the_service_creates_meanwhile_is_raised_all_the_same(api):
    table, lines = CounterTable(COUNTER_TABLE, "us-east-1"), []
    write = table.write

    def service_first(item_key, request):
        tickets_of(api.get("/orders", query={"count": "3"}))  # the service creates the item first
        table.write = write
        return write(item_key, request)

    table.write = service_first
    assert raise_key(table, orders_lanes(), 9000, report=lines.append) == [Outcome.RAISED]
    assert lines == ["orders (lane 0): last 5002 -> last 9000; next ticket 9001"]
    assert tickets_of(api.get("/orders")) == [9001]


# --- raise: refusals, before any write ------------------------------------------------------------


def test_a_lane_with_another_step_is_refused_and_nothing_is_written(api, admin):
    api.put_item({"counter": {"S": "orders"}, "last": {"N": "5004"}, "step": {"N": "2"}, "first": {"N": "5000"}})
    before = api.items()
    status, out, err = admin(EXAMPLE_CONFIG, "raise", "orders", "--above", "9000")
    assert status == 1
    assert err.startswith("error: 'orders' has step 2, but the config gives it step 1")
    assert "Nothing was written." in err and "Traceback" not in err
    assert api.items() == before


def test_a_sharded_key_that_issued_without_shards_is_refused(deploy, admin):
    east = deploy(EXAMPLE_CONFIG, "us-east-1")
    tickets_of(east.get("/orders"))  # orders issued as one lane
    before = east.items()
    resharded = {**EXAMPLE_CONFIG, "counters": {"orders": {"start": 5000, "shards": 2}}}
    status, _, err = admin(resharded, "raise", "orders", "--above", "9000")
    assert status == 1
    assert "'orders' issued tickets up to 5000 without shards, but the config gives it 2 shards" in err
    assert east.items() == before


def test_a_target_past_max_is_refused(api, admin):
    capped = {**EXAMPLE_CONFIG, "counters": {"small": {"start": 1, "max": 100}}}
    status, _, err = admin(capped, "raise", "small", "--above", "100")
    assert status == 1
    assert err.startswith(
        "error: small: the lane's next ticket above 100 would be 101, past the counter's max "
        "(100); raise max in cdk.json"
    )
    assert api.items() == []


def test_an_unserved_key_under_strict_keys_is_refused(api, admin):
    status, _, err = admin({**EXAMPLE_CONFIG, "strictKeys": True}, "raise", "nobody", "--above", "1")
    assert status == 1 and "'nobody' is not configured" in err and "strictKeys" in err
    assert "add it to tickets.counters there first" in err  # the way out, named


# --- raise and migrate honour the ledger -----------------------------------------------------------


def _working_copy(tmp_path: Path, deployed: dict, changed: dict) -> Path:
    """The ledger as synthesis left it for `deployed`; beside it a cdk.json changed to `changed`."""
    config = write_cdk_json(tmp_path, deployed)
    config.write_text(json.dumps({"app": "unused", "context": {"tickets": changed}}))
    return config


def test_hole_4_raise_refuses_a_working_copy_the_ledger_refuses_with_synthesiss_message(api, tmp_path):
    """Hole 4: strictKeys false is deployed, so foo is served unconfigured; a working copy configures foo
    with its own start, which the ledger refuses. raise used to write foo's lane on that layout, and the
    deployed version answered 409 config_mismatch for foo from then on."""
    changed = {**EXAMPLE_CONFIG, "counters": {**EXAMPLE_CONFIG["counters"], "foo": {"start": 1000}}}
    config = _working_copy(tmp_path, EXAMPLE_CONFIG, changed)
    before = api.items()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["raise", "foo", "--above", "5000", "--config", str(config), "--table", COUNTER_TABLE])
    assert api.items() == before
    assert tickets_of(api.get("/foo", query={"count": "2"})) == [1, 2]  # the deployed version serves foo
    assert status == 1 and out.getvalue() == ""

    from tickets_deploy.config import parse_config
    from tickets_deploy.ledger import LedgerError, read_ledger_file, record_services

    with pytest.raises(LedgerError) as synthesis:
        record_services(read_ledger_file(tmp_path / "tickets.lock.json"), {"tickets-counters": parse_config(changed)})
    assert err.getvalue() == (
        f"error: cdk.json: refused by the deployment ledger {tmp_path / 'tickets.lock.json'} (nothing was "
        f"written):\n{synthesis.value}\n"
    )
    assert "counters.foo: a new counter with start 1000" in err.getvalue()


def test_migrate_refuses_a_working_copy_the_ledger_refuses(api, tmp_path):
    changed = {**EXAMPLE_CONFIG, "regionSlots": 2}
    config = _working_copy(tmp_path, EXAMPLE_CONFIG, changed)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(
            [
                "migrate",
                "--from-table",
                "old",
                "--key-attribute",
                "k",
                "--value-attribute",
                "v",
                "--config",
                str(config),
            ]
        )
    assert status == 1 and "regionSlots: the ledger records 1, cdk.json says 2." in err.getvalue()


def test_raise_without_a_ledger_is_refused_except_on_a_local_endpoint(api, tmp_path):
    config = write_cdk_json(tmp_path, EXAMPLE_CONFIG)
    (tmp_path / "tickets.lock.json").unlink()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(["raise", "orders", "--above", "9", "--config", str(config), "--table", COUNTER_TABLE])
    assert status == 1 and "no ledger" in err.getvalue() and "python -m tickets_cdk init" in err.getvalue()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        main(["raise", "orders", "--above", "9", "--config", str(config), "--endpoint-url", "http://127.0.0.1:9"])
    assert "note: no tickets.lock.json beside" in err.getvalue() and "no ledger" not in err.getvalue()


# --- export ----------------------------------------------------------------------------------------


def test_export_prints_every_item_as_json_lines_sorted_and_exact(api, admin):
    tickets_of(api.get("/orders", query={"count": "3"}))
    tickets_of(api.get("/invoices"))
    api.put_item({"counter": {"S": "big"}, "last": {"N": str(MAX_TICKET)}})
    api.put_item({"counter": {"S": "odd"}, "last": {"N": "12.5"}})
    status, out, _ = admin(EXAMPLE_CONFIG, "export")
    assert status == 0
    assert out == [
        '{"counter": "big", "last": 9223372036854775807}',
        '{"counter": "invoices", "first": 1, "last": 1, "step": 10}',
        '{"counter": "odd", "last": {"N": "12.5"}}',
        '{"counter": "orders", "first": 5000, "last": 5002, "step": 1}',
    ]
    assert json.loads(out[0])["last"] == MAX_TICKET


def test_export_reads_every_page(api, admin):
    for n in range(30):
        api.put_item({"counter": {"S": f"k{n:02d}"}, "last": {"N": str(n)}})
    table = CounterTable(COUNTER_TABLE, "us-east-1")
    pages = []
    original = table.client.scan

    def small_pages(**request):
        page = original(**request, Limit=7)
        pages.append(len(page["Items"]))
        return page

    table.client.scan = small_pages
    assert len(list(table.scan())) == 30
    assert len(pages) >= 5


# --- errors ----------------------------------------------------------------------------------------


def test_a_missing_table_says_which_and_where_to_look(aws, admin):
    status, out, err = admin(EXAMPLE_CONFIG, "export")
    assert status == 1 and out == []
    assert err == (
        "error: no table 'tickets-test' in us-east-1: check --table (default: tableName in cdk.json) "
        "and --region (default: the first region in cdk.json)\n"
    )


def test_a_config_error_is_one_line_and_exit_1(tmp_path, capsys):
    assert main(["export", "--config", str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "missing.json: not found" in err and "Traceback" not in err
    assert main(["export", "--config", str(write_cdk_json(tmp_path)), "--region", "ap-south-1"]) == 1
    assert "region 'ap-south-1' is not in" in capsys.readouterr().err


def test_no_credentials_is_a_clear_error(tmp_path, capsys, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["export", "--config", str(write_cdk_json(tmp_path))]) == 1
    assert capsys.readouterr().err.startswith("error: no AWS credentials found")


def test_throttling_beyond_the_retries_is_a_clear_error(aws):
    table = CounterTable(COUNTER_TABLE, "us-east-1")
    with Stubber(table.client) as stub:
        stub.add_client_error("scan", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(AdminError) as raised:
            list(table.scan())
    assert str(raised.value).startswith("DynamoDB throttled the table 'tickets-test' in us-east-1 beyond the retries")


# --- --help ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], ["raise", "export", "examples:", "--endpoint-url http://127.0.0.1:8001"]),
        (["raise"], ["smallest ticket", "never lowers", "--above N", "--region", "--table", "--config", "examples:"]),
        (["export"], ["JSON Lines: one JSON", "object per line", "--endpoint-url", "examples:"]),
    ],
)
def test_the_commands_help_says_what_it_does_with_examples(args, expected):
    result = subprocess.run(
        [sys.executable, "-m", "tickets_admin", *args, "--help"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    for text in expected:
        assert text in result.stdout, (text, result.stdout)


def test_every_registered_command_has_help_with_examples_and_is_listed(capsys):
    """Every command of the registry (tickets_admin.__main__.COMMANDS), so a new one needs no entry here."""
    from tickets_admin.__main__ import COMMANDS, main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    listed = capsys.readouterr().out
    assert done.value.code == 0
    for command in COMMANDS:
        assert command.name in listed and command.help in " ".join(listed.split()), command.name
        with pytest.raises(SystemExit) as done:
            main([command.name, "--help"])
        text = capsys.readouterr().out
        assert done.value.code == 0 and "examples:" in text and f"python -m tickets_admin {command.name}" in text, text


def test_raise_help_gives_the_safe_order_for_a_move_from_another_counter():
    # Raising only after callers moved lets Tickets issue low numbers, which the old counter issued too.
    result = subprocess.run(
        [sys.executable, "-m", "tickets_admin", "raise", "--help"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    help_text = " ".join(result.stdout.split())
    assert "plus a margin before pointing callers at Tickets" in help_text, help_text
    assert "again above its final value once it has stopped" in help_text, help_text
    assert "docs/how-to/restore.md, docs/how-to/migrate.md" in help_text, help_text


# --- against a moto server shared with the local server ---------------------------------------------

RACE_CONFIG = {
    **EXAMPLE_CONFIG,
    "counters": {"load": {"start": 700000}, "big": {"start": str(MAX_TICKET - 5), "max": str(MAX_TICKET)}},
}
RACE_ABOVE = 705000


@pytest.mark.slow
def test_raise_while_the_local_server_issues_never_repeats_and_lands_above_n(tmp_path):
    """Four clients issue over HTTP while raise runs: no ticket twice, every request that began after
    raise returned gets a ticket above N, and the tickets are the lane's, below N from its first and
    above N from its smallest one above N, with no gap but those a 503 can explain: under load a write
    may outlast its timeout after it was applied, and its ticket is then never seen (a gap, as
    docs/explanation/failures-and-idempotency.md#failures says; the client retries)."""
    config = write_cdk_json(tmp_path, RACE_CONFIG)
    with SerialMotoServer() as moto_server, LocalServer(config_path=config, endpoint_url=moto_server.url) as server:
        issued: list[tuple[float, int]] = []  # (when the request began, the ticket)
        raised_at: list[float] = []
        lock = threading.Lock()
        started = threading.Event()

        unavailable: list[int] = []  # one entry per 503 answer

        def client() -> None:
            after_raise = 0
            while after_raise < 10:
                began = time.monotonic()
                reply = call(server.url, "/load")
                if reply.status == 503:
                    with lock:
                        unavailable.append(1)
                    continue
                assert reply.status == 200, reply.body
                with lock:
                    issued.append((began, reply.json()["ticket"]))
                    if len(issued) >= 20:
                        started.set()
                    if raised_at and began > raised_at[0]:
                        after_raise += 1

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        assert started.wait(60)
        status = main(
            ["raise", "load", "--above", str(RACE_ABOVE), "--config", str(config), "--endpoint-url", moto_server.url]
        )
        with lock:
            raised_at.append(time.monotonic())
        for thread in threads:
            thread.join(120)

        assert status == 0
        tickets = [ticket for _, ticket in issued]
        assert not [t for t, n in Counter(tickets).items() if n > 1], "a ticket was issued twice"
        assert all(ticket > RACE_ABOVE for began, ticket in issued if began > raised_at[0])
        below = {t for t in tickets if t <= RACE_ABOVE}
        above = {t for t in tickets if t > RACE_ABOVE}
        assert min(below) >= 700000 and len(above) >= 40
        lost = set(range(700000, max(below) + 1)) - below
        lost |= set(range(RACE_ABOVE + 1, max(above) + 1)) - above
        assert len(lost) <= len(unavailable), f"tickets {sorted(lost)} were lost, with {len(unavailable)} 503s"

        # The same endpoint through `python -m tickets_admin`, as an operator runs it beside `make serve`;
        # and decimal strings in cdk.json reach the local server exactly.
        assert call(server.url, "/big?count=6").json()["tickets"] == list(range(MAX_TICKET - 5, MAX_TICKET + 1))
        exported = subprocess.run(
            [
                sys.executable,
                "-m",
                "tickets_admin",
                "export",
                "--config",
                str(config),
                "--endpoint-url",
                moto_server.url,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ},
        )
        assert exported.returncode == 0, exported.stderr
        items = {item["counter"]: item for item in map(json.loads, exported.stdout.splitlines())}
        assert items["load"]["last"] == max(tickets)
        assert items["big"] == {"counter": "big", "first": MAX_TICKET - 5, "last": MAX_TICKET, "step": 1}


# --- --service: a library user's app, from the ledger alone ----------------------------------------

EXAMPLE_APP = REPO / "examples" / "cdk-app"


def run_admin(*args: str) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue().splitlines(), err.getvalue()


@pytest.fixture
def shop(aws, tmp_path, monkeypatch):
    """examples/cdk-app's ledger alone in the current directory (no cdk.json, as an app built on the
    construct has none), and its two services' counter tables in moto."""
    (tmp_path / "tickets.lock.json").write_bytes((EXAMPLE_APP / "tickets.lock.json").read_bytes())
    monkeypatch.chdir(tmp_path)
    for region, tables in (
        ("eu-west-1", ("shop-order-numbers", "shop-invoice-numbers")),
        ("us-east-1", ("shop-order-numbers",)),
    ):
        for table in tables:
            moto_client(region).create_table(**create_table_arguments(table, COUNTER_KEY))
    return tmp_path


def test_service_raise_list_export_take_everything_from_the_ledger(shop):
    assert not (shop / "cdk.json").exists()
    status, out, err = run_admin(
        "--service", "shop-order-numbers", "raise", "orders", "--above", "120000", "--region", "us-east-1"
    )
    assert (status, err) == (0, "")
    assert out == [  # the slot (1 of 2) and the start (5000) are the ledger's
        "raising orders above 120000 in us-east-1 (slot 1 of 2), table shop-order-numbers: 1 lane(s)",
        "orders (lane 1): unused -> last 119999; next ticket 120001",  # lane 1: 5001, 5003, ...
    ]
    status, listed, _ = run_admin("--service", "shop-order-numbers", "list", "--region", "us-east-1")
    assert status == 0 and any(line.startswith("orders") and "119999" in line for line in listed), listed
    status, exported, _ = run_admin("--service", "shop-order-numbers", "export", "--region", "us-east-1")
    assert status == 0
    assert [json.loads(line) for line in exported] == [{"counter": "orders", "first": 5001, "last": 119999, "step": 2}]
    # The default region is the ledger's first (eu-west-1, slot 0), whose table is still empty.
    assert run_admin("--service", "shop-order-numbers", "export")[:2] == (0, [])


def test_service_takes_strict_keys_and_each_counters_settings_from_the_ledger(shop):
    # The app sets strictKeys: the ledger records it, so an unconfigured key is not raised.
    status, out, err = run_admin("--service", "shop-invoice-numbers", "raise", "receipts", "--above", "5")
    assert status == 1 and out == [] and "'receipts' is not configured" in err and "strictKeys is on" in err
    status, out, _ = run_admin("--service", "shop-invoice-numbers", "raise", "credit-notes", "--above", "5")
    assert status == 0 and out[-1] == "credit-notes (lane 0): unused -> last 5; next ticket 6"


def test_service_errors_name_the_ledger_and_what_it_records(shop):
    status, _, err = run_admin("--service", "shop-refunds", "list")
    assert status == 1 and err == (
        f"error: {shop / 'tickets.lock.json'}: no service 'shop-refunds' (the ledger records: "
        "shop-invoice-numbers, shop-order-numbers)\n"
    )
    status, _, err = run_admin("--service", "shop-order-numbers", "--ledger", str(shop / "other.json"), "list")
    assert status == 1 and "no ledger" in err and "Traceback" not in err
    status, _, err = run_admin("--service", "shop-order-numbers", "list", "--region", "ap-south-1")
    assert status == 1 and "region 'ap-south-1' is not in" in err and "shop-order-numbers" in err


def test_service_with_a_ledger_from_before_the_deployed_settings_says_how_to_record_them(shop):
    old = REPO / "tests" / "fixtures" / "ledgers" / "format-2-two-services.json"
    status, _, err = run_admin("--service", "shop-order-numbers", "--ledger", str(old), "list")
    assert status == 1 and "written before it recorded the deployed settings" in err and "--config" in err


def test_workers_prints_a_pools_live_leases_by_worker_id(deploy, admin):
    """`tickets_admin workers POOL` reads the leases with the function's own store: each live one, its epoch,
    expiry and owner; a pool the config does not name is refused."""
    pools = {"regions": {"us-east-1": 0}, "workers": {"snowflake": {"size": 4, "ttlSeconds": 60}}}
    region = deploy(pools)
    leases = [region.post("/_workers/snowflake", body=json.dumps({"owner": f"api-{n}"})).body for n in range(2)]
    released = leases.pop()
    region.call(f"/_workers/snowflake/{released['worker']}", "DELETE", body=json.dumps({"epoch": 1}))
    status, lines, _ = admin(pools, "workers", "snowflake")
    assert status == 0
    assert lines[0] == "pool snowflake: 1 of 4 ids leased (ttl 60 s)"
    [line] = lines[1:]
    assert line.split()[:3] == [str(leases[0]["worker"]), "epoch", "1"] and line.endswith("owner api-0")
    assert admin(pools, "workers", "elsewhere")[0] == 1
