"""Every DynamoDB call tickets_admin makes on a table. Each write is conditional, so it is safe while the service
issues tickets: a write whose condition fails changes nothing; any other failure is an AdminError saying what to do."""

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

from .listing import scan

REGION_NAMED_BY = "--region (default: the first region in cdk.json)"
ATTEMPTS = 5  # reads and conditional writes of one item before giving up on an item that keeps changing
# Generous retries: an operator's command may wait a little for a throttled table.
CLIENT_CONFIG = Config(connect_timeout=5, read_timeout=10, retries={"mode": "standard", "total_max_attempts": 8})


class AdminError(RuntimeError):
    """Something the operator must fix or retry; the message says what."""


class MissingTable(AdminError):
    pass


def operator_client(service: str, region: str, endpoint_url: str | None = None) -> Any:
    """With the operator's credentials; at an endpoint without any, dummy ones (botocore signs nothing without)."""
    session = new_session()
    dummy = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    credentials = dummy if endpoint_url and session.get_credentials() is None else {}
    return session.create_client(
        service, region_name=region, endpoint_url=endpoint_url, config=CLIENT_CONFIG, **credentials
    )


class CounterTable:
    def __init__(self, table: str, region: str, endpoint_url: str | None = None, named_by: str = "") -> None:
        self.table, self.region = table, region
        self._where = f"table {table!r} in {region}" + (f" at {endpoint_url}" if endpoint_url else "")
        self._named_by = named_by or f"--table (default: tableName in cdk.json) and {REGION_NAMED_BY}"
        self.client = operator_client("dynamodb", region, endpoint_url)

    @contextmanager
    def dynamodb_errors(self) -> Iterator[None]:
        """A failed call inside, directly or through the service's store (a TicketsError), as an AdminError."""
        try:
            yield
        except TicketsError as err:
            if not isinstance(err.__cause__, (ClientError, BotoCoreError)):
                raise AdminError(err.message) from None
            raise self._explain(err.__cause__) from None
        except (ClientError, BotoCoreError) as err:
            raise self._explain(err) from None

    def get(self, item_key: str) -> Item | None:
        return (self._call("get_item", item_key, ConsistentRead=True) or {}).get("Item")

    def update(self, item_key: str, request: dict[str, Any]) -> Item | None:
        """The item as a conditional UpdateItem left it; None if its condition failed."""
        response = self._call("update_item", item_key, ReturnValues="ALL_NEW", **request)
        return None if response is None else response.get("Attributes", {})

    def write(self, item_key: str, request: dict[str, Any]) -> bool:
        return self.update(item_key, request) is not None

    def delete(self, item_key: str, request: dict[str, Any]) -> bool:
        return self._call("delete_item", item_key, **request) is not None

    def scan(self) -> Iterator[Item]:
        with self.dynamodb_errors():
            yield from scan(self.client, self.table)

    def _call(self, operation: str, item_key: str, **request: Any) -> dict[str, Any] | None:
        with self.dynamodb_errors():
            try:
                response: dict[str, Any] = getattr(self.client, operation)(
                    TableName=self.table, Key={COUNTER_KEY: {"S": item_key}}, **request
                )
            except ClientError as err:
                if is_condition_failure(err):
                    return None
                raise
        return response

    def _explain(self, err: ClientError | BotoCoreError) -> AdminError:
        if isinstance(err, NoCredentialsError):
            return AdminError(NO_CREDENTIALS)
        if isinstance(err, BotoCoreError):
            return AdminError(f"cannot reach the {self._where}: {err}")
        failure, code, message = classify(err), error_code(err), err.response.get("Error", {}).get("Message", "")
        if failure is Failure.MISSING_TABLE:
            return MissingTable(f"no {self._where}: check {self._named_by}")
        if failure is Failure.UNAVAILABLE:
            return AdminError(
                f"DynamoDB throttled the {self._where} beyond the retries, or was unavailable; what was done is "
                "printed above; run the command again (it is safe to repeat)"
            )
        if failure is Failure.ACCESS_DENIED:
            return AdminError(f"DynamoDB denied a request to the {self._where} (check credentials): {code}: {message}")
        return AdminError(f"DynamoDB refused a request to the {self._where}: {code}: {message}")
