"""The shape of the two DynamoDB tables, in one place for the stack and the local server."""

from __future__ import annotations

from typing import Any

COUNTER_KEY = "counter"  # partition key: the counter's key, or key#shard
LAST = "last"  # the last ticket issued on the lane: the high-water mark an operator reads
STEP = "step"  # stride * lanes, fixed when the item is created
FIRST = "first"  # the lane's first ticket (start and slot), fixed when the item is created
SHARDS = "shards"  # the key's shard count, fixed with the step: the plain `key` item guards a sharded key
STRIDE = "stride"  # a sharded key's stride, recorded with its layout (step alone does not tell stride from slots)

IDEMPOTENCY_KEY = "id"
IDEMPOTENCY_TTL = "expiration"
# The stack names the counter table (config `tableName`) and lets CloudFormation name the idempotency
# table; the local server, which needs a name for both, appends this to the counter table's.
IDEMPOTENCY_TABLE_SUFFIX = "-idempotency"


def create_table_arguments(table_name: str, partition_key: str) -> dict[str, Any]:
    """Arguments for DynamoDB CreateTable, matching the table the stack defines."""
    return {
        "TableName": table_name,
        "KeySchema": [{"AttributeName": partition_key, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": partition_key, "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
