"""The shape of the DynamoDB tables, for the stack and the local server (a counter item: lane_item.py)."""

from __future__ import annotations

from typing import Any

COUNTER_KEY = "counter"  # partition key: the counter's key, or key#shard
# Items that are not counters (no key starts with "_"), e.g. tickets_admin migrate's records.
RESERVED_ITEM_PREFIX = "_"
FINGERPRINT_PREFIX = "_opaque-key#"  # + a key version: its key's fingerprint (tickets/opaque/secret.py)


def is_counter_item(name: str) -> bool:
    return not name.startswith(RESERVED_ITEM_PREFIX)


IDEMPOTENCY_KEY = "id"
IDEMPOTENCY_TTL = "expiration"
IDEMPOTENCY_TABLE_SUFFIX = "-idempotency"


def create_table_arguments(table_name: str, partition_key: str, sort_key: str | None = None) -> dict[str, Any]:
    """Arguments for DynamoDB CreateTable, matching the table the stack defines (a sort key is a number)."""
    keys = [(partition_key, "HASH", "S"), *([(sort_key, "RANGE", "N")] if sort_key else [])]
    return {
        "TableName": table_name,
        "KeySchema": [{"AttributeName": name, "KeyType": kind} for name, kind, _ in keys],
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": type_} for name, _, type_ in keys],
        "BillingMode": "PAY_PER_REQUEST",
    }


# The series table (tickets/series/store.py), only with series: a numeric sort key, as a journal is read in order.
SERIES_PARTITION_KEY = "pk"
SERIES_SORT_KEY = "n"
SERIES_TABLE_SUFFIX = "-series"


# The workers table (tickets/workers/store.py), only with pools, has its shape: `pk` a pool, `n` a worker id.
WORKERS_TABLE_SUFFIX = "-workers"


def create_series_table_arguments(table_name: str) -> dict[str, Any]:
    return create_table_arguments(table_name, SERIES_PARTITION_KEY, SERIES_SORT_KEY)
