"""Every DynamoDB call tickets_admin makes, on the counter table, through a plain botocore client.

Each write is conditional, so it is safe while the service issues tickets: a write that would lower
a lane's `last` or contradict its recorded layout fails its condition and changes nothing, and the
caller reads the item again to say what happened. Any other failure becomes an AdminError whose
message says what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from tickets.sequence import Lane
from tickets.store import layout_update
from tickets.tables import COUNTER_KEY, FIRST, LAST, SHARDS, STEP

# Generous retries: an operator's command may wait a little for a throttled table.
CLIENT_CONFIG = Config(connect_timeout=5, read_timeout=10, retries={"mode": "standard", "total_max_attempts": 8})
_THROTTLED = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})

# A lane item: created with the lane's step and first, never over an existing item.
_CREATE = "SET #last = :last, #step = :step, #first = :first"
_CREATE_IF = "attribute_not_exists(#counter)"
# Raise `last` (never lower it) and record step and first if the item (made by hand) lacks them.
_RAISE = "SET #last = :last, #step = :step, #first = :first"
_RAISE_IF = (
    "(attribute_not_exists(#last) OR #last < :last) AND (attribute_not_exists(#step) OR #step = :step) "
    "AND (attribute_not_exists(#first) OR #first = :first) AND attribute_not_exists(#shards)"
)
_NAMES = {"#last": LAST, "#step": STEP, "#first": FIRST, "#shards": SHARDS}


class AdminError(RuntimeError):
    """Something the operator must fix or retry; the message says what."""


Item = dict[str, Any]  # an item as DynamoDB's JSON: {"counter": {"S": "orders"}, "last": {"N": "5003"}, ...}


class CounterTable:
    def __init__(
        self,
        table: str,
        region: str,
        endpoint_url: str | None = None,
        *,
        named_by: str = "--table (default: tableName in cdk.json)",  # what sets `table`, for the errors
    ):
        self.table = table
        self._named_by = named_by
        self._where = f"table {table!r} in {region}" + (f" at {endpoint_url}" if endpoint_url else "")
        session = botocore.session.get_session()
        credentials: dict[str, str] = {}
        if endpoint_url and session.get_credentials() is None:
            # DynamoDB Local, dynalite and moto accept any credentials, but botocore signs nothing without some.
            credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
        self._client = session.create_client(
            "dynamodb", region_name=region, endpoint_url=endpoint_url, config=CLIENT_CONFIG, **credentials
        )

    def get(self, item_key: str) -> Item | None:
        """The item, read consistently, or None if there is none."""
        return self._call("get_item", TableName=self.table, Key=_key(item_key), ConsistentRead=True).get("Item")

    def create_lane(self, lane: Lane, last: int) -> bool:
        """Create the lane's item with `last`; False if an item appeared meanwhile."""
        return self._update(
            lane.item_key,
            _CREATE,
            _CREATE_IF,
            {"#counter": COUNTER_KEY, **_lane_names()},
            {":last": _n(last), ":step": _n(lane.step), ":first": _n(lane.first)},
        )

    def raise_last(self, lane: Lane, last: int) -> bool:
        """Set the lane item's `last` to `last` if it is lower (and step/first if missing); False if the
        item changed meanwhile: `last` passed it, or it no longer fits the lane."""
        return self._update(
            lane.item_key,
            _RAISE,
            _RAISE_IF,
            _NAMES,
            {":last": _n(last), ":step": _n(lane.step), ":first": _n(lane.first)},
        )

    def record_layout(self, key: str, shard_zero: Lane) -> bool:
        """Record a sharded key's layout on its plain item, exactly as the service does; False if that
        item disagrees."""
        layout = layout_update(shard_zero)
        return self._update(
            key,
            layout["UpdateExpression"],
            layout["ConditionExpression"],
            layout["ExpressionAttributeNames"],
            layout["ExpressionAttributeValues"],
        )

    def scan(self) -> Iterator[Item]:
        """Every item, page by page, read consistently."""
        request: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        while True:
            page = self._call("scan", **request)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _update(
        self, item_key: str, update: str, condition: str, names: dict[str, str], values: dict[str, Any]
    ) -> bool:
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=_key(item_key),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as err:
            if err.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise self._explain(err) from None
        return True

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        try:
            response: dict[str, Any] = getattr(self._client, operation)(**request)
            return response
        except ClientError as err:
            if err.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise
            raise self._explain(err) from None
        except NoCredentialsError:
            raise AdminError(
                "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or sign in with aws sso login)"
            ) from None
        except BotoCoreError as err:
            raise AdminError(f"cannot reach the {self._where}: {err}") from None

    def _explain(self, err: ClientError) -> AdminError:
        code = err.response["Error"]["Code"]
        message = err.response["Error"].get("Message", "")
        if code == "ResourceNotFoundException":
            return AdminError(
                f"no {self._where}: check {self._named_by} and --region (default: the first region in cdk.json)"
            )
        if code in _THROTTLED:
            return AdminError(
                f"DynamoDB throttled the {self._where} beyond the retries; what was done is "
                "printed above; run the command again (it is safe to repeat)"
            )
        return AdminError(f"DynamoDB refused a request to the {self._where}: {code}: {message}")


def _key(item_key: str) -> dict[str, dict[str, str]]:
    return {COUNTER_KEY: {"S": item_key}}


def _lane_names() -> dict[str, str]:
    return {name: attribute for name, attribute in _NAMES.items() if name != "#shards"}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}
