"""The operator's repairs on keys whose layout changed above a fence (docs/explanation/epochs-and-fences.md):
`tickets_admin raise`, `migrate`, `export` and `list` on dynalite, after real `tickets_admin fence` runs, with
the real handler issuing over HTTP (a local server on the same dynalite) before and after each fence.

A fenced key's items are its epochs': `orders` (epoch 0), `orders@1`, `orders@1#0`, ... (tickets.epochs).
`raise` works on the current epoch's lanes, the ones the deployed function issues from; every earlier epoch's
lanes were stopped at their fence and are never raised or restarted: a restore from before a fence brings them
back, and `raise` stops them again. A point-in-time restore is played as DynamoDB does it: the whole table as
it was at an earlier moment (`Snapshot`).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest

from local_support import call, running_dynalite, write_cdk_json
from tickets.tables import COUNTER_KEY
from tickets_admin.__main__ import main as admin_main
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import read_ledger_file, record_services, write_ledger_file
from tickets_local.server import LocalServer

pytestmark = pytest.mark.slow

TABLE = "fenced-repairs"
# Epoch 0: `orders` unsharded, `hot` on two shards. Each later config changes a layout above a fence.
EPOCH_0 = {
    "regions": {"us-east-1": 0},
    "tableName": TABLE,
    "strictKeys": True,
    "counters": {"orders": {"start": 5000}, "hot": {"start": 1, "shards": 2}, "orders-eu": {"start": 1}},
}
ORDERS_SHARDED = {
    **EPOCH_0,
    "counters": {**EPOCH_0["counters"], "orders": {"start": 5000, "shards": 2}, "hot": {"start": 1, "shards": 3}},
}
ORDERS_UNSHARDED = {**EPOCH_0, "counters": {**ORDERS_SHARDED["counters"], "orders": {"start": 5000, "stride": 3}}}


@dataclass
class Snapshot:
    """Every item of the counter table at one moment: what a point-in-time restore to it gives back."""

    items: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Deployment:
    """One region on a dynalite: cdk.json and its ledger in `directory`, fenced and synthesised as an operator
    does, and a local server of the current config issuing on demand."""

    directory: Path
    endpoint: str

    def __post_init__(self) -> None:
        self.config_file = write_cdk_json(self.directory, EPOCH_0)  # and its ledger, as `make init` writes it
        self.client = boto3.client("dynamodb", endpoint_url=self.endpoint, region_name="us-east-1")
        with LocalServer(config_path=self.config_file, endpoint_url=self.endpoint):
            pass  # the tables, made as the local server makes them (the stack's)

    def take(self, path: str, times: int) -> list[int]:
        """`times` requests to the function of the config the ledger accepts, as deployed: its tickets. Each
        request tries the key's lanes in a random order (tickets.issuer): seeded, so a run is the same every time
        (the assertions read the tickets, not the order)."""
        random.seed(f"{path} {times}")
        issued = []
        with LocalServer(config_path=self.config_file, endpoint_url=self.endpoint) as server:
            for _ in range(times):
                reply = call(server.url, path, method="POST")
                assert reply.status == 200, reply
                issued += reply.json().get("tickets", [reply.json()["ticket"]])
        return issued

    def change_layout(self, tickets: dict[str, Any]) -> str:
        """Edit cdk.json, fence (the real command), synthesise: what `fence` printed."""
        self.config_file.write_text(json.dumps({"app": "unused", "context": {"tickets": tickets}}))
        status, out, err = self.admin("fence", "--endpoint-url", self.endpoint)
        assert status == 0, err
        ledger_path = self.directory / "tickets.lock.json"
        config = parse_config(tickets)
        write_ledger_file(ledger_path, record_services(read_ledger_file(ledger_path), {config.table_name: config}))
        return out

    def admin(self, *arguments: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = admin_main([arguments[0], "--config", str(self.config_file), *arguments[1:]])
        return status, out.getvalue(), err.getvalue()

    def repair(self, *arguments: str) -> tuple[int, str, str]:
        """A repair command (raise, migrate, export, list) on this region's table."""
        return self.admin(*arguments, "--endpoint-url", self.endpoint)

    def item(self, name: str) -> dict[str, Any] | None:
        found = self.client.get_item(TableName=TABLE, Key={COUNTER_KEY: {"S": name}}, ConsistentRead=True)
        return found.get("Item")

    def snapshot(self) -> Snapshot:
        return Snapshot(self.client.scan(TableName=TABLE, ConsistentRead=True)["Items"])

    def restore(self, snapshot: Snapshot) -> None:
        """The table as it was at the snapshot (a point-in-time restore, served under the same name)."""
        for item in self.client.scan(TableName=TABLE, ConsistentRead=True)["Items"]:
            self.client.delete_item(TableName=TABLE, Key={COUNTER_KEY: item[COUNTER_KEY]})
        for item in snapshot.items:
            self.client.put_item(TableName=TABLE, Item=item)


@pytest.fixture
def deployment(tmp_path: Path):
    with running_dynalite() as endpoint:
        yield Deployment(tmp_path, endpoint)


def test_raise_after_a_restore_on_a_key_fenced_to_shards_raises_the_new_lanes_only(deployment: Deployment) -> None:
    """The documented repair after a point-in-time restore, on a key fenced from one lane to two shards: the
    raise writes the epoch's items (`orders@1`, `orders@1#0`, `orders@1#1`), leaves the stopped `orders` as
    the fence left it, and the function then issues above every ticket issued before the restore."""
    issued = deployment.take("/orders", 5)  # 5000 .. 5004
    out = deployment.change_layout(ORDERS_SHARDED)
    assert "orders: fence 5005; epoch 1 (start 5000, stride 1, shards 2, regionSlots 1) starts at 5005" in out
    after_fence = deployment.snapshot()
    issued += deployment.take("/orders", 6)  # on orders@1#0 and orders@1#1, from 5005 on
    highest = max(issued)
    stopped = deployment.item("orders")

    deployment.restore(after_fence)  # the epoch's lanes are gone: the function would hand out 5005 again
    status, out, err = deployment.repair("raise", "orders", "--above", str(highest))
    assert status == 0, err
    assert "orders@1#0 (lane 0): unused -> last" in out and "orders@1#1 (lane 1): unused -> last" in out
    assert "orders: stopped at a fence (epoch 0); left alone" in out
    assert deployment.item("orders") == stopped  # never raised, never restarted
    assert deployment.item("orders@1") is not None  # the epoch's layout record, as the function writes it

    again = deployment.take("/orders", 4)
    assert min(again) > highest and not set(again) & set(issued)


def test_raise_stops_again_the_old_lanes_a_restore_from_before_the_fence_brought_back(
    deployment: Deployment,
) -> None:
    """A restore to a moment before the fence puts the old layout's lanes back on (their step as before the
    fence): a function of the old layout still running somewhere (a region not yet deployed, a rollback) would
    issue from them again, and climb into the new epoch's numbers. `raise` stops them again before it raises
    the epoch's lanes, and a dry-run migrate only says so."""
    deployment.take("/hot", 4)  # hot#0, hot#1
    before_fence = deployment.snapshot()
    deployment.change_layout(ORDERS_SHARDED)  # hot: two shards to three, above a fence
    issued = deployment.take("/hot", 6)
    deployment.restore(before_fence)
    assert deployment.item("hot")["step"] == {"N": "2"}  # the layout record, live again

    status, out, err = deployment.repair("raise", "hot", "--above", str(max(issued)))
    assert status == 0, err
    restored = {item[COUNTER_KEY]["S"] for item in before_fence.items}
    for name in ("hot", "hot#0", "hot#1"):
        if name in restored:
            assert f"{name}: not stopped (a restore from before its fence brought it back): stopped again" in out
        else:  # a shard no request had used before the fence: the fence wrote it stopped, the restore dropped it
            assert f"{name}: absent (a restore from before its fence dropped it): written stopped (epoch 0)" in out
        assert deployment.item(name)["step"] == {"N": "0"}
    assert [f"hot@1#{shard} (lane {shard}): unused -> last" in out for shard in range(3)] == [True] * 3
    assert min(deployment.take("/hot", 3)) > max(issued)


def test_migrate_raises_a_fenced_key_and_verify_counts_every_epoch_s_tickets(deployment: Deployment) -> None:
    """migrate goes through raise: on a key fenced to shards it raises the epoch's lanes. Its --verify counts
    the numbers Tickets issued twice on every epoch's lanes, the stopped ones included."""
    legacy = "legacy-counters"
    deployment.client.create_table(
        TableName=legacy,
        KeySchema=[{"AttributeName": "systemKey", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "systemKey", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    # dynalite creates a table asynchronously, even with --createTableMs 0: a put before it is ACTIVE is refused.
    deployment.client.get_waiter("table_exists").wait(TableName=legacy, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})

    def old_counter(value: int) -> None:
        item = {"systemKey": {"S": "orders"}, "counter": {"N": str(value)}}
        deployment.client.put_item(TableName=legacy, Item=item)

    def migrate(*more: str) -> tuple[int, str, str]:
        options = ("--from-table", legacy, "--key-attribute", "systemKey", "--value-attribute", "counter")
        return deployment.repair("migrate", *options, *more)

    old_counter(4990)
    status, out, err = migrate("--margin", "5")  # below orders' start: nothing to raise yet
    assert status == 0, err
    issued = deployment.take("/orders", 3)  # 5000, 5001, 5002
    deployment.change_layout(ORDERS_SHARDED)
    issued += deployment.take("/orders", 4)  # 5003 .. 5006 on the epoch's two shards

    old_counter(max(issued) + 3)  # the old callers kept going, past the target (4995)
    status, out, err = migrate("--verify")
    assert status == 1
    said = (
        f"Tickets has issued {len(issued)} of those numbers in us-east-1 ({min(issued)} .. {max(issued)}): each twice"
    )
    assert said in out  # 5000 .. 5002 on the stopped lane, the rest on the epoch's two shards

    status, out, err = migrate("--margin", "100")
    target = max(issued) + 3 + 100
    assert "orders: OVERLAP" in out
    assert f"raised above {target} (old value {max(issued) + 3} + margin 100)" in out and "orders@1#1 (lane 1)" in out
    assert min(deployment.take("/orders", 2)) > target


def test_export_and_list_show_every_epoch_the_stopped_ones_marked(deployment: Deployment) -> None:
    """Three epochs of `orders` (one lane, two shards, one lane of stride 3) and two of `hot` (two shards,
    three): export prints every item of every epoch as stored (the stopped ones with step 0 and the step
    they had); list has a line per key and epoch, named as its items, oldest first (`orders-eu`, another key,
    sorts after them all), the stopped ones marked."""
    deployment.take("/orders", 2)  # 5000, 5001
    hot = deployment.take("/hot", 3)
    deployment.change_layout(ORDERS_SHARDED)
    sharded = deployment.take("/orders", 3)  # from 5002, on two shards
    hot_epoch_1 = deployment.take("/hot", 1)
    fence = max(sharded) + 1
    out = deployment.change_layout(ORDERS_UNSHARDED)
    start = fence + (5000 - fence) % 3  # the smallest number at or above the fence that is 5000 modulo 3
    assert f"orders: fence {fence}; epoch 2 (start 5000, stride 3, shards 1, regionSlots 1) starts at {start}" in out
    assert deployment.take("/orders", 2) == [start, start + 3]
    deployment.take("/orders-eu", 1)

    status, out, err = deployment.repair("export")
    assert status == 0, err
    exported = {item["counter"]: item for item in map(json.loads, out.splitlines())}
    hot_shard = f"hot@1#{hot_epoch_1[0] - (max(hot) + 1)}"  # the one shard of epoch 1 a request used
    assert sorted(exported) == [
        "hot", "hot#0", "hot#1", "hot@1", hot_shard,  # the fence wrote every old item, used or not, stopped
        "orders", "orders-eu", "orders@1", "orders@1#0", "orders@1#1", "orders@2",
    ]  # fmt: skip
    fence_id = exported["orders"]["fencedBy"]  # the fence that stopped it (tickets_admin/commands/fence.py)
    assert exported["orders"] == {
        "counter": "orders",
        "first": 5000,
        "last": 5001,
        "step": 0,
        "stoppedStep": 1,
        "fencedBy": fence_id,
        "fenceSealed": {"BOOL": True},  # export keeps typed form for what is not a whole number
    }
    assert exported["orders@1#1"]["step"] == 0 and exported["orders@1#1"]["stoppedStep"] == 2
    assert exported["orders@2"] == {"counter": "orders@2", "first": start, "last": start + 3, "step": 3}

    status, out, err = deployment.repair("list")
    assert status == 0, err
    # Columns are two spaces apart at least; "0 (stopped)" holds one space.
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    assert rows[0] == ["key", "lanes", "last", "step", "left"]
    left = {row[0]: row[4] for row in rows[1:]}
    assert all(left[key] == "0" for key in ("hot", "orders", "orders@1"))  # stopped lanes issue no more
    assert all(int(left[key]) > 0 for key in ("hot@1", "orders@2", "orders-eu"))
    assert [row[:4] for row in rows] == [
        ["key", "lanes", "last", "step"],
        ["hot", str(len({ticket % 2 for ticket in hot})), str(max(hot)), "0 (stopped)"],
        ["hot@1", "1", str(hot_epoch_1[0]), "3"],
        ["orders", "1", "5001", "0 (stopped)"],
        ["orders@1", str(len({ticket % 2 for ticket in sharded})), str(max(sharded)), "0 (stopped)"],
        ["orders@2", "1", str(start + 3), "3"],
        ["orders-eu", "1", "1", "1"],
    ]


def test_raise_refuses_a_stopped_lane_naming_the_fence_that_finishes_the_change(deployment: Deployment) -> None:
    """Run where the ledger does not record the fence (here: no ledger beside cdk.json, which only a local
    endpoint allows), raise finds the lanes it would write stopped: it names the command that records the
    change instead of "check --config", and writes nothing."""
    deployment.take("/orders", 2)
    deployment.change_layout(ORDERS_SHARDED)
    (deployment.directory / "tickets.lock.json").rename(deployment.directory / "elsewhere.json")
    before = deployment.snapshot()
    status, _, err = deployment.repair("raise", "orders", "--above", "9000")
    assert status == 1
    assert "orders was stopped at a fence" in err and "`.venv/bin/python -m tickets_admin fence`" in err
    assert "check --config" not in err and err.rstrip().endswith("Nothing was written.")
    assert deployment.snapshot() == before
