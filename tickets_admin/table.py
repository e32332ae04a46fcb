"""Every DynamoDB call tickets_admin makes, on the counter table, through a plain botocore client.

Each write is conditional, so it is safe while the service issues tickets: a write that would lower
a lane's `last` or contradict its recorded layout fails its condition and changes nothing, and the
caller reads the item again to say what happened. Any other failure becomes an AdminError whose
message says what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from tickets.botocore_session import NO_CREDENTIALS, new_session
from tickets.dynamodb_errors import Failure, classify, error_code, is_condition_failure
from tickets.errors import TicketsError
from tickets.lane_item import Item
from tickets.tables import COUNTER_KEY

# Generous retries: an operator's command may wait a little for a throttled table.
CLIENT_CONFIG = Config(connect_timeout=5, read_timeout=10, retries={"mode": "standard", "total_max_attempts": 8})


class AdminError(RuntimeError):
    """Something the operator must fix or retry; the message says what."""


class MissingTable(AdminError):
    """The table does not exist where the command looked: a command that knows why it might not (fence: a region
    never deployed) says so."""


class CounterTable:
    def __init__(
        self,
        table: str,
        region: str,
        endpoint_url: str | None = None,
        *,
        named_by: str = "--table (default: tableName in cdk.json)",  # what sets `table`, for the errors
        region_named_by: str = "--region (default: the first region in cdk.json)",  # and what sets `region`
    ):
        self.table = table
        self.region = region
        self._named_by = named_by
        self._region_named_by = region_named_by
        self._where = f"table {table!r} in {region}" + (f" at {endpoint_url}" if endpoint_url else "")
        session = new_session()
        credentials: dict[str, str] = {}
        if endpoint_url and session.get_credentials() is None:
            # DynamoDB Local, dynalite and moto accept any credentials, but botocore signs nothing without some.
            credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
        self._client = session.create_client(
            "dynamodb", region_name=region, endpoint_url=endpoint_url, config=CLIENT_CONFIG, **credentials
        )

    @property
    def client(self) -> Any:
        """The botocore client, for the series commands (tickets_admin/journal.py reads through the service's store)."""
        return self._client

    def explain(self, err: ClientError | BotoCoreError) -> AdminError:
        """An AdminError saying what to do about a failed call on this table."""
        if isinstance(err, NoCredentialsError):
            return AdminError(NO_CREDENTIALS)
        if isinstance(err, BotoCoreError):
            return AdminError(f"cannot reach the {self._where}: {err}")
        return self._explain(err)

    @contextmanager
    def dynamodb_errors(self) -> Iterator[None]:
        """A failed call inside (directly, or through the service's store, which wraps it in a TicketsError)
        as an AdminError saying what to do: the one place tickets_admin reads DynamoDB's errors."""
        try:
            yield
        except TicketsError as err:
            cause = err.__cause__
            if isinstance(cause, (ClientError, BotoCoreError)):
                raise self.explain(cause) from None
            raise AdminError(err.message) from None
        except (ClientError, BotoCoreError) as err:
            raise self.explain(err) from None

    def get(self, item_key: str) -> Item | None:
        """The item, read consistently, or None if there is none."""
        return self._call("get_item", TableName=self.table, Key=_key(item_key), ConsistentRead=True).get("Item")

    def write(self, item_key: str, request: dict[str, Any]) -> bool:
        """One conditional UpdateItem on `item_key` (`request` from tickets.lane_item); False if its
        condition failed: the item changed meanwhile, and nothing was written."""
        try:
            self._call("update_item", TableName=self.table, Key=_key(item_key), **request)
        except ClientError:  # _call lets only a failed condition through
            return False
        return True

    def update(self, item_key: str, request: dict[str, Any]) -> Item | None:
        """`write`, returning the item as the write left it; None if the condition failed."""
        try:
            response = self._call(
                "update_item", TableName=self.table, Key=_key(item_key), ReturnValues="ALL_NEW", **request
            )
        except ClientError:  # _call lets only a failed condition through
            return None
        item: Item = response.get("Attributes", {})
        return item

    def delete(self, item_key: str, request: dict[str, Any]) -> bool:
        """One conditional DeleteItem on `item_key` (`request` from tickets.lane_item); False if its condition
        failed: the item changed meanwhile, and nothing was deleted."""
        try:
            self._call("delete_item", TableName=self.table, Key=_key(item_key), **request)
        except ClientError:  # _call lets only a failed condition through
            return False
        return True

    def scan(self) -> Iterator[Item]:
        """Every item, page by page, read consistently."""
        request: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        while True:
            page = self._call("scan", **request)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        try:
            response: dict[str, Any] = getattr(self._client, operation)(**request)
            return response
        except ClientError as err:
            if is_condition_failure(err):
                raise
            raise self.explain(err) from None
        except BotoCoreError as err:
            raise self.explain(err) from None

    def _explain(self, err: ClientError) -> AdminError:
        """The function's answer to the same error (tickets.dynamodb_errors), told to an operator."""
        failure = classify(err)
        if failure is Failure.MISSING_TABLE:
            return MissingTable(f"no {self._where}: check {self._named_by} and {self._region_named_by}")
        if failure is Failure.UNAVAILABLE:
            return AdminError(
                f"DynamoDB throttled the {self._where} beyond the retries, or was unavailable; what was done is "
                "printed above; run the command again (it is safe to repeat)"
            )
        code, message = error_code(err), err.response.get("Error", {}).get("Message", "")
        if failure is Failure.ACCESS_DENIED:
            return AdminError(
                f"DynamoDB denied a request to the {self._where} ({code}): the credentials in use may not "
                f"use this table: {message}"
            )
        return AdminError(f"DynamoDB refused a request to the {self._where}: {code}: {message}")


def _key(item_key: str) -> dict[str, dict[str, str]]:
    return {COUNTER_KEY: {"S": item_key}}
