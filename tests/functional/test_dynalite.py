"""The local server on a second DynamoDB implementation: dynalite (npm, pinned in package.json,
installed by `make test`), over real HTTP.

dynalite is atomic and keeps its data while it runs, but has no TransactWriteItems and ignores
ReturnValuesOnConditionCheckFailure: a failed condition comes back without the item. So here
every refusal goes through the consistent read that explains it, and every new shard through
the two conditional writes (layout, then the shard's item). The first test pins those facts,
so the others cannot pass by accident on an endpoint that behaves like DynamoDB.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from local_support import call, running_dynalite, write_cdk_json
from tickets.tables import COUNTER_KEY, create_table_arguments
from tickets_admin.__main__ import main as admin_main
from tickets_local.deployment import load_deployment
from tickets_local.server import LocalServer
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow

CONFIG = {
    "regions": {"us-east-1": 0},
    "counters": {
        "orders": {"start": 5000},
        "invoices": {"stride": 10},
        "small": {"max": 3},
        "hot": {"shards": 4, "max": 12},  # four lanes of three tickets: twelve requests must use all four
    },
    "compat": {"path": "counter"},  # the compatibility route, after `tickets_admin migrate`
}


@pytest.fixture(scope="module")
def dynalite():
    """A dynalite on a free loopback port, stopped after the module's tests."""
    with running_dynalite() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def config_path(tmp_path_factory) -> Path:
    return write_cdk_json(tmp_path_factory.mktemp("dynalite"), CONFIG)


@pytest.fixture(scope="module")
def table(dynalite, config_path):
    """The counter table on dynalite, made as the local server makes it, and a client for it."""
    name = load_deployment(config_path, None).counter_table
    client = boto3.client("dynamodb", endpoint_url=dynalite, region_name="us-east-1")
    client.create_table(**create_table_arguments(name, COUNTER_KEY))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    return client, name


@pytest.fixture(scope="module")
def shared_server(dynalite, table):
    """One local server (a process of its own) on the module's dynalite."""
    with LocalTickets(CONFIG, endpoint_url=dynalite, arguments=["--without-ledger"]) as running:
        yield running


@pytest.fixture
def server(shared_server):
    """The shared server, with the counters of earlier tests gone and its handler rebuilt, as a fresh one."""
    shared_server.reset()
    return shared_server


def tickets(server, path: str, method: str = "GET", headers: dict[str, str] | None = None) -> list[int]:
    reply = call(server.url, path, method=method, headers=headers)
    assert reply.status == 200, (path, reply.status, reply.body)
    answer = reply.json()
    return answer.get("tickets", [answer["ticket"]])


def refusal(server, path: str) -> tuple[int, str]:
    reply = call(server.url, path)
    assert reply.headers["content-type"] == "application/json", reply
    return reply.status, reply.json()["error"]


def stored(table, key: str) -> dict | None:
    client, name = table
    return client.get_item(TableName=name, Key={COUNTER_KEY: {"S": key}}, ConsistentRead=True).get("Item")


def put(table, item: dict[str, int | str]) -> None:
    client, name = table
    client.put_item(
        TableName=name,
        Item={field: {"S": value} if isinstance(value, str) else {"N": str(value)} for field, value in item.items()},
    )


def test_dynalite_is_the_hard_case_no_failed_items_and_no_transactions(table):
    client, name = table
    put(table, {COUNTER_KEY: "probe", "last": 1})
    with pytest.raises(ClientError) as failed:
        client.update_item(
            TableName=name,
            Key={COUNTER_KEY: {"S": "probe"}},
            UpdateExpression="SET #l = :l",
            ConditionExpression="#l = :other",
            ExpressionAttributeNames={"#l": "last"},
            ExpressionAttributeValues={":l": {"N": "2"}, ":other": {"N": "7"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert "Item" not in failed.value.response
    with pytest.raises(ClientError) as unknown:
        client.transact_write_items(TransactItems=[{"Put": {"TableName": name, "Item": {COUNTER_KEY: {"S": "x"}}}}])
    assert unknown.value.response["Error"]["Code"] == "UnknownOperationException"


def test_a_plain_key_issues_its_sequence_and_a_restart_continues_it(dynalite, config_path, table):
    with LocalServer(config_path=config_path, endpoint_url=dynalite) as server:
        assert tickets(server, "/orders") == [5000]
        assert tickets(server, "/orders?count=3", method="POST") == [5001, 5002, 5003]
        assert tickets(server, "/invoices?count=2") == [1, 11]
    with LocalServer(config_path=config_path, endpoint_url=dynalite) as server:  # the same tables, reused
        assert tickets(server, "/orders") == [5004]
        assert tickets(server, "/invoices") == [21]
        assert call(server.url, "/_counters/orders").json()["last"] == 5004
    assert stored(table, "orders") == {
        COUNTER_KEY: {"S": "orders"},
        "last": {"N": "5004"},
        "step": {"N": "1"},
        "first": {"N": "5000"},
    }


def test_a_sharded_key_uses_every_lane_then_is_exhausted(server, table):
    issued = [tickets(server, "/hot")[0] for _ in range(12)]
    assert sorted(issued) == list(range(1, 13))  # distinct, and together every ticket up to max
    lanes = {}
    for ticket in issued:
        lanes.setdefault((ticket - 1) % 4, []).append(ticket)
    assert {lane: sorted(t) for lane, t in lanes.items()} == {s: [1 + s, 5 + s, 9 + s] for s in range(4)}
    assert all(t == sorted(t) for t in lanes.values())  # each lane increases
    before = [stored(table, key) for key in ("hot", "hot#0", "hot#1", "hot#2", "hot#3")]
    assert before[0] == {
        COUNTER_KEY: {"S": "hot"},
        "step": {"N": "4"},
        "shards": {"N": "4"},
        "first": {"N": "1"},
        "stride": {"N": "1"},
    }
    assert [refusal(server, "/hot") for _ in range(3)] == [(409, "exhausted")] * 3
    assert [stored(table, key) for key in ("hot", "hot#0", "hot#1", "hot#2", "hot#3")] == before


def test_max_3_gives_1_2_3_then_exhausted(server, table):
    assert [tickets(server, "/small")[0] for _ in range(3)] == [1, 2, 3]
    before = stored(table, "small")
    assert refusal(server, "/small") == (409, "exhausted")
    assert refusal(server, "/small?count=2") == (409, "exhausted")
    assert stored(table, "small") == before


def test_an_item_code_did_not_write_is_refused_untouched_until_tickets_admin_raises_it(
    server, table, dynalite, config_path
):
    for unwritten in (
        {COUNTER_KEY: "manual", "last": 41},  # on the lane: typed in by hand
        {COUNTER_KEY: "offlane", "last": 5, "step": 10},  # invoices-like lanes: 1, 11, 21
        {COUNTER_KEY: "below", "last": -7, "step": 1},
    ):
        put(table, unwritten)
        before = stored(table, unwritten[COUNTER_KEY])
        assert [refusal(server, f"/{unwritten[COUNTER_KEY]}") for _ in range(3)] == [(409, "config_mismatch")] * 3
        assert stored(table, unwritten[COUNTER_KEY]) == before
    raise_manual = ["raise", "manual", "--above", "41", "--config", str(config_path), "--table", table[1]]
    assert admin_main([*raise_manual, "--endpoint-url", dynalite]) == 0
    assert tickets(server, "/manual?count=2") == [42, 43]
    assert stored(table, "manual")["first"] == {"N": "1"}


def test_a_changed_shard_count_is_refused_before_any_write(dynalite, tmp_path, table):
    put(table, {COUNTER_KEY: "layout", "step": 2, "shards": 2, "first": 1})
    changed = write_cdk_json(tmp_path, {**CONFIG, "counters": {"layout": {"shards": 4}}})
    with LocalServer(config_path=changed, endpoint_url=dynalite) as server:
        assert [refusal(server, "/layout") for _ in range(4)] == [(409, "config_mismatch")] * 4
    assert [stored(table, f"layout#{shard}") for shard in range(4)] == [None] * 4


def test_idempotency_keys_work_on_dynalite(server):
    headers = {"Idempotency-Key": "dynalite-1"}
    first = tickets(server, "/idem?count=2", method="POST", headers=headers)
    assert tickets(server, "/idem?count=2", method="POST", headers=headers) == first  # the stored answer
    reused = call(server.url, "/idem?count=3", method="POST", headers=headers)
    assert (reused.status, reused.json()["error"]) == (422, "idempotency_key_reused")
    assert tickets(server, "/idem") == [first[-1] + 1]  # the repeat burned nothing


def test_migrate_an_old_counter_table_then_call_the_compatibility_route(dynalite, config_path, server):
    """The old API Gateway counter pattern's table (systemKey -> counter) on dynalite, migrated with a
    margin by `tickets_admin migrate`, twice; then the old callers' request, at the local server."""
    client = boto3.client("dynamodb", endpoint_url=dynalite, region_name="us-east-1")
    client.create_table(
        TableName="legacy-counters",
        KeySchema=[{"AttributeName": "systemKey", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "systemKey", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName="legacy-counters", WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    for key, value in (("legacy-a", "41"), ("legacy-b", "7000"), ("bad key", "3")):
        client.put_item(TableName="legacy-counters", Item={"systemKey": {"S": key}, "counter": {"N": value}})
    command = ["migrate", "--from-table", "legacy-counters", "--key-attribute", "systemKey"]
    command += ["--value-attribute", "counter", "--margin", "100", "--endpoint-url", dynalite]
    command += ["--config", str(config_path)]

    def migrate() -> tuple[int, list[str]]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = admin_main(command)
        return status, out.getvalue().splitlines()

    status, out = migrate()
    assert status == 1  # the item named "bad key" is skipped, and listed
    assert out[1:] == [
        "legacy-a: raised above 141 (old value 41 + margin 100): legacy-a (lane 0): unused -> last 141; "
        "next ticket 142",
        "legacy-b: raised above 7100 (old value 7000 + margin 100): legacy-b (lane 0): unused -> last 7100; "
        "next ticket 7101",
        'skipped systemKey {"S": "bad key"}: not a valid key (a string of 1-100 characters from A-Z a-z 0-9 . _ : '
        "-, the first one a letter or digit)",
        "2 key(s): 2 raised, 0 already above, 0 not migrated; 1 item(s) skipped",
    ]
    status, out = migrate()
    assert out[-1] == "2 key(s): 0 raised, 2 already above, 0 not migrated; 1 item(s) skipped"

    answers = [call(server.url, "/counter?systemKey=legacy-a") for _ in range(3)]
    assert [(reply.status, reply.headers["content-type"], reply.body) for reply in answers] == [
        (200, "text/plain; charset=utf-8", str(ticket).encode()) for ticket in (142, 143, 144)
    ]
    assert call(server.url, "/counter?systemKey=legacy-b").body == b"7101"
