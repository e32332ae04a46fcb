"""Listing counters: `python -m tickets_admin list` (a Scan with the operator's credentials) and the local
server's GET /_local/counters (its own table), both built on tickets_admin/listing.py; and --version on
every command."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

import tickets
from common import EXAMPLE_CONFIG
from local_support import call, write_cdk_json
from moto_deployment import COUNTER_TABLE
from tickets_admin.__main__ import main as admin_main
from tickets_local.server import LocalServer
from tickets_local.testing import COUNTERS_PATH

SHARDED = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {
        "hot": {"start": 1000, "stride": 3, "shards": 4, "max": 10000},
        "orders": {"start": 5000, "max": 6000},
    },
}


def admin_list(tmp_path, config: dict, *extra: str) -> tuple[int, list[str]]:
    out, config_path = io.StringIO(), write_cdk_json(tmp_path, config)
    with contextlib.redirect_stdout(out):
        status = admin_main(["list", "--config", str(config_path), "--table", COUNTER_TABLE, *extra])
    return status, out.getvalue().splitlines()


def test_list_prints_each_counter_its_lanes_last_step_and_tickets_left(deploy, tmp_path):
    region = deploy(SHARDED)
    region.pick_lanes(lambda lanes: lanes.sort(key=lambda lane: lane.shard))  # every request on shard 0
    region.get("/orders", query={"count": "3"})
    region.get("/hot")
    region.get("/hot")
    region.get("/unconfigured")  # a key no config names is listed too: the table says what was issued
    region.put_item({"counter": {"S": "by-hand"}, "last": {"N": "77"}})  # an item code did not write: no step
    status, lines = admin_list(tmp_path, SHARDED)
    assert status == 0
    # left: each lane's (max - last) // step. hot's one lane: 1048, 1072, ..., 9976; orders': 5006, ..., 6000;
    # unconfigured's (max 2^53-1, odd numbers): 3, 5, ..., 2^53-1; by-hand, no step: unknown.
    assert ((10000 - 1024) // 24, (6000 - 5004) // 2, (2**53 - 1 - 1) // 2) == (374, 498, 4503599627370495)
    assert lines == [
        "key           lanes  last  step  left",
        "by-hand       1      77    -     -",
        "hot           1      1024  24    374",  # one shard used of four; the plain item holds the layout
        "orders        1      5004  2     498",  # 5000, 5002, 5004: slot 0 of 2
        "unconfigured  1      1     2     4503599627370495",
    ]


def test_list_leaves_out_the_records_tickets_admin_keeps_beside_the_counters(deploy, tmp_path):
    """`migrate` records its targets in the counter table under `_migration...`: no key starts with `_`,
    and a listing of counters names none of them."""
    region = deploy(EXAMPLE_CONFIG)
    region.get("/orders")
    region.put_item({"counter": {"S": "_migration"}, "from": {"S": "old-counters"}})
    region.put_item({"counter": {"S": "_migration#orders"}, "target": {"N": "9000"}})
    status, lines = admin_list(tmp_path, EXAMPLE_CONFIG)
    assert (status, lines) == (0, ["key     lanes  last  step  left", f"orders  1      5000  1     {2**53 - 1 - 5000}"])


def test_list_of_an_empty_table_is_the_header(deploy, tmp_path):
    deploy(EXAMPLE_CONFIG)
    assert admin_list(tmp_path, EXAMPLE_CONFIG) == (0, ["key  lanes  last  step  left"])


def test_list_names_a_missing_table(deploy, tmp_path, capsys):
    deploy(EXAMPLE_CONFIG)
    status = admin_main(["list", "--config", str(write_cdk_json(tmp_path, EXAMPLE_CONFIG)), "--table", "nope"])
    assert status == 1
    assert "no table 'nope' in us-east-1" in capsys.readouterr().err


@pytest.mark.slow
def test_the_local_server_lists_the_counters_of_its_table(tmp_path):
    with LocalServer(config_path=write_cdk_json(tmp_path, EXAMPLE_CONFIG)) as server:
        assert call(server.url, COUNTERS_PATH).json() == {"counters": []}
        call(server.url, "/orders?count=2")
        call(server.url, "/invoices")
        reply = call(server.url, COUNTERS_PATH)
        assert (reply.status, reply.headers["content-type"], reply.headers["cache-control"]) == (
            200,
            "application/json",
            "no-store",
        )
        assert reply.json() == {
            "counters": [
                {"key": "invoices", "lanes": 1, "last": 1, "step": 10},
                {"key": "orders", "lanes": 1, "last": 5001, "step": 1},
            ]
        }
        refused = call(server.url, COUNTERS_PATH, method="POST")
        assert (refused.status, refused.headers["allow"]) == (405, "GET")
        assert call(server.url, "/_local/nothing").status == 404  # the rest of /_local is the function's: 404


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "tickets_admin", "--version"],
        [sys.executable, "-m", "tickets_local", "--version"],
        [sys.executable, "-m", "tickets_client", "--version"],
    ],
    ids=["tickets_admin", "tickets_local", "tickets_client"],
)
def test_every_command_says_its_version(command):
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == tickets.__version__
