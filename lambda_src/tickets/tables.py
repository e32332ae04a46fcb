"""The shape of the two DynamoDB tables, in one place for the stack and the local server (what a
counter item holds: lane_item.py)."""

from __future__ import annotations

from typing import Any

COUNTER_KEY = "counter"  # partition key: the counter's key, or key#shard

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
