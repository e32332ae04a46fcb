"""The memory backend's DynamoDB calls where the handler's tests on every backend do not reach (a journal's pages,
what it refuses), against the answers DynamoDB (and moto) give; the handler's own tests run on it too
(EVERY_BACKEND in test_handler.py and the others)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from botocore.exceptions import ClientError

from tickets.tables import COUNTER_KEY, create_series_table_arguments, create_table_arguments
from tickets_local.memory import MemoryDynamoDB


@pytest.fixture
def memory() -> MemoryDynamoDB:
    tables = MemoryDynamoDB()
    tables.create_table(**create_table_arguments("counters", COUNTER_KEY))
    tables.create_table(**create_series_table_arguments("series"))
    return tables


def code(failed: pytest.ExceptionInfo[ClientError]) -> str:
    return failed.value.response["Error"]["Code"]


def test_a_failed_condition_writes_nothing_and_shows_the_item_when_asked(memory):
    key = {COUNTER_KEY: {"S": "orders"}}
    update = {"TableName": "counters", "Key": key, "UpdateExpression": "SET #l = if_not_exists(#l, :z) + :one"}
    update |= {"ExpressionAttributeNames": {"#l": "last"}, "ExpressionAttributeValues": {":z": {"N": "0"}}}
    update["ExpressionAttributeValues"][":one"] = {"N": "1"}
    assert memory.update_item(**update, ReturnValues="UPDATED_NEW") == {"Attributes": {"last": {"N": "1"}}}
    refused = {**update, "ConditionExpression": "#l <> :one AND NOT attribute_not_exists(#l)"}
    with pytest.raises(ClientError) as failed:
        memory.update_item(**refused, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    assert (code(failed), failed.value.response["Item"]) == (
        "ConditionalCheckFailedException",
        {**key, "last": {"N": "1"}},
    )
    with pytest.raises(ClientError) as failed:
        memory.update_item(**refused)
    assert "Item" not in failed.value.response
    assert memory.get_item(TableName="counters", Key=key) == {"Item": {**key, "last": {"N": "1"}}}
    assert memory.batch_get_item(RequestItems={"counters": {"Keys": [key, {COUNTER_KEY: {"S": "none"}}]}}) == {
        "Responses": {"counters": [{**key, "last": {"N": "1"}}]},
        "UnprocessedKeys": {},
    }


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"UpdateExpression": "ADD #l :one"}, "knows SET and REMOVE, not ADD"),
        ({"UpdateExpression": "SET #l = :one", "ScanIndexForward": False}, "does not implement ScanIndexForward"),
        ({"UpdateExpression": "SET #l = :two"}, "undefined: ':two'"),
        ({"UpdateExpression": "SET #l = :one", "ConditionExpression": "begins_with(#l, :one)"}, "no comparison"),
        ({"UpdateExpression": "SET #l = #l + :one"}, "refers to an attribute that does not exist"),
    ],
)
def test_what_the_code_never_writes_is_refused_naming_it(memory, request_, message):
    with pytest.raises(ClientError, match=message) as failed:
        memory.update_item(
            TableName="counters",
            Key={COUNTER_KEY: {"S": "orders"}},
            ExpressionAttributeNames={"#l": "last"},
            ExpressionAttributeValues={":one": {"N": "1"}},
            **request_,
        )
    assert code(failed) == "ValidationException"
    assert memory.scan(TableName="counters")["Items"] == []


def test_an_expression_it_cannot_read_is_refused_at_once():
    # A nested path after long names: a regex that backtracks over the names' splits would read it for hours, holding
    # the GIL, so the call runs in a process of its own.
    script = """
from botocore.exceptions import ClientError
from tickets.tables import COUNTER_KEY, create_table_arguments
from tickets_local.memory import MemoryDynamoDB
memory = MemoryDynamoDB()
memory.create_table(**create_table_arguments("counters", COUNTER_KEY))
try:
    memory.update_item(
        TableName="counters",
        Key={COUNTER_KEY: {"S": "orders"}},
        UpdateExpression="SET #counter = :one",
        ConditionExpression="attribute_not_exists(#counter) AND attribute_not_exists(#counter.shards)",
        ExpressionAttributeNames={"#counter": "last"},
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
except ClientError as err:
    print(err.response["Error"]["Code"], err)
"""
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("the memory backend was still reading the expression after 20 s")
    assert done.stdout.startswith("ValidationException"), done.stdout
    assert "cannot read" in done.stdout


def test_a_journal_is_paged_in_its_numbers_order_across_queries(memory):
    for number in (10, 9, 2, 1, 100):  # in no order, and 100 after 9 as numbers, not as text
        memory.put_item(TableName="series", Item={"pk": {"S": "e#k#s"}, "n": {"N": str(number)}})
    memory.put_item(TableName="series", Item={"pk": {"S": "e#k#other"}, "n": {"N": "5"}})
    query = {"TableName": "series", "KeyConditionExpression": "#pk = :pk AND #n > :after"}
    query |= {"ExpressionAttributeNames": {"#pk": "pk", "#n": "n"}}
    query["ExpressionAttributeValues"] = {":pk": {"S": "e#k#s"}, ":after": {"N": "1"}}
    first = memory.query(**query, Limit=2)
    assert [item["n"]["N"] for item in first["Items"]] == ["2", "9"]
    rest = memory.query(**query, Limit=5, ExclusiveStartKey=first["LastEvaluatedKey"])
    assert [item["n"]["N"] for item in rest["Items"]] == ["10", "100"] and "LastEvaluatedKey" not in rest


def test_a_range_of_sort_keys_is_queried_with_between_its_ends_included(memory):
    """The worker pools' query (tickets/workers/store.py): one pool's ids from low to high, both ends included."""
    for number in (0, 1, 5, 9, 10, 11):
        memory.put_item(TableName="series", Item={"pk": {"S": "pool"}, "n": {"N": str(number)}})
    memory.put_item(TableName="series", Item={"pk": {"S": "other"}, "n": {"N": "5"}})
    query = {"TableName": "series", "KeyConditionExpression": "#pk = :pool AND #n BETWEEN :low AND :high"}
    query |= {"ExpressionAttributeNames": {"#pk": "pk", "#n": "n"}}
    query["ExpressionAttributeValues"] = {":pool": {"S": "pool"}, ":low": {"N": "1"}, ":high": {"N": "10"}}
    assert [item["n"]["N"] for item in memory.query(**query)["Items"]] == ["1", "5", "9", "10"]
