"""The shape of the DynamoDB tables, in one place for the stack and the local server (what a
counter item holds: lane_item.py)."""

from __future__ import annotations

from typing import Any

COUNTER_KEY = "counter"  # partition key: the counter's key, or key#shard
# Items that are not counters: their `counter` starts with "_", which no key (a letter or digit first:
# keys.KEY_PATTERN) and so no key#shard can. The service never addresses them; tickets_admin's export
# skips them. `tickets_admin migrate` records its targets there (tickets_admin/migrate.py).
RESERVED_ITEM_PREFIX = "_"
FINGERPRINT_PREFIX = "_opaque-key#"  # + a key version: its key's fingerprint (tickets/opaque/secret.py)


def is_counter_item(name: str) -> bool:
    """Is the item named `name` a counter's (a key's or a shard's), not a record such as a migration's?"""
    return not name.startswith(RESERVED_ITEM_PREFIX)


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


# The series table (tickets/series/store.py): a partition key and a numeric sort key, since a journal
# is read in order. It exists only when series are configured; the stack names it the counter
# table's name with this suffix, as the local server does.
SERIES_PARTITION_KEY = "pk"
SERIES_SORT_KEY = "n"
SERIES_TABLE_SUFFIX = "-series"


# The workers table (tickets/workers/store.py) has the series table's shape: `pk` a pool, `n` a worker id, so that
# a pool's leases are listed and searched in worker order by Query. It exists only when pools are configured.
WORKERS_TABLE_SUFFIX = "-workers"


def create_series_table_arguments(table_name: str) -> dict[str, Any]:
    """Arguments for DynamoDB CreateTable of the series table (or the workers table), matching the stack's."""
    return {
        "TableName": table_name,
        "KeySchema": [
            {"AttributeName": SERIES_PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SERIES_SORT_KEY, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": SERIES_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SERIES_SORT_KEY, "AttributeType": "N"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
