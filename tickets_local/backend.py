"""Where the local handler's DynamoDB lives (docs/reference/backends.md): in memory (memory.py, the default), moto in
this process, or any DynamoDB-compatible endpoint (DynamoDB itself, DynamoDB Local, dynalite, a moto server).
engines.py's BACKENDS names them, one entry each.

Every way the tables are made from `tickets.tables.create_table_arguments`, the definition the stack uses; on an
endpoint an existing table is reused, so there the counters survive a restart of the local server.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, WaiterError

from tickets.botocore_session import new_session
from tickets.tables import (
    COUNTER_KEY,
    IDEMPOTENCY_KEY,
    IDEMPOTENCY_TTL,
    create_series_table_arguments,
    create_table_arguments,
)

from .deployment import LocalDeployment
from .memory import MemoryDynamoDB

log = logging.getLogger("tickets_local")

# botocore's service-specific endpoint variable: a client made without an endpoint (the server's, on
# moto) would follow it past moto.
ENDPOINT_ENV = "AWS_ENDPOINT_URL_DYNAMODB"
_BATCH_WRITE_LIMIT = 25  # DynamoDB's BatchWriteItem limit
_SETUP_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})


class BackendError(RuntimeError):
    """The DynamoDB backend cannot be used; the message says why and what to do."""


class Backend(Protocol):
    description: str  # what the server's banner says of it
    endpoint_url: str | None  # where its tables are, when another process holds them
    persistent: bool  # whether the tables outlive the server (opaque counters then need a key file)

    def environment(self) -> dict[str, str | None]:
        """What the process's environment needs while it serves (None: unset)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def prepare(self, deployment: LocalDeployment) -> None:
        """The deployment's tables, made if missing."""

    def client(self, region: str) -> Any:
        """The handler's DynamoDB client."""

    def empty(self, deployment: LocalDeployment) -> None:
        """Every item of the deployment's tables gone (the tables stay)."""


class MemoryBackend:
    """The tables in this process's memory (memory.py): nothing to install, a call in microseconds, a reset in the
    time of a few assignments, nothing kept after stop. Atomic, as each call holds one lock."""

    description = "in memory (counters last until the server stops)"
    endpoint_url: str | None = None
    persistent = False

    def __init__(self) -> None:
        self._tables = MemoryDynamoDB()

    def environment(self) -> dict[str, str | None]:
        return {}

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def prepare(self, deployment: LocalDeployment) -> None:
        for arguments in table_arguments(deployment):
            self._tables.create_table(**arguments)

    def client(self, region: str) -> Any:
        return self._tables

    def empty(self, deployment: LocalDeployment) -> None:
        self._tables.empty()


class _BotocoreClient:
    """The handler's client of a backend reached through botocore: made as the function makes its own."""

    endpoint_url: str | None

    def prepare(self, deployment: LocalDeployment) -> None:
        ensure_tables(deployment, self.endpoint_url)

    def client(self, region: str) -> Any:
        # Imported now: Powertools reads its settings (the server's environment) when tickets.app makes its logger.
        from tickets.app import dynamodb_client

        return dynamodb_client(region_name=region, endpoint_url=self.endpoint_url)


class MotoBackend(_BotocoreClient):
    """moto's DynamoDB inside this process: nothing to install, nothing kept after stop.

    moto is process-global (it patches botocore), and not safe for concurrent calls:
    the server therefore runs one invocation at a time.
    """

    description = (
        "moto in-process (embedded DynamoDB; counters last until the last server on moto in this process stops)"
    )
    endpoint_url: str | None = None
    persistent = False  # whether the tables outlive the server (opaque counters then need a key file)

    def __init__(self) -> None:
        self._mock: Any = None

    def environment(self) -> dict[str, str | None]:
        # A user's custom endpoint would take the handler's calls past moto to a real service.
        return {ENDPOINT_ENV: None, "AWS_ENDPOINT_URL": None}

    def start(self) -> None:
        from moto import mock_aws  # only this backend needs moto

        self._mock = mock_aws()
        self._mock.start()  # patches botocore and sets fake credentials, restored by stop()

    def stop(self) -> None:
        if self._mock is not None:
            self._mock.stop()
            self._mock = None

    def empty(self, deployment: LocalDeployment) -> None:
        """The tables, empty: made anew, which in moto costs a few calls however many items they held."""
        client = _dynamodb(region_name=deployment.region, config=_SETUP_CONFIG)
        for arguments in table_arguments(deployment):
            client.delete_table(TableName=arguments["TableName"])
        ensure_tables(deployment, None)


class EndpointBackend(_BotocoreClient):
    """A DynamoDB-compatible endpoint reached over HTTP."""

    persistent = True

    def __init__(self, endpoint_url: str):
        self.endpoint_url = endpoint_url
        self.description = f"DynamoDB at {endpoint_url} (counters persist there across restarts)"

    def environment(self) -> dict[str, str | None]:
        env: dict[str, str | None] = {}  # the server gives its client endpoint_url itself
        if botocore.session.Session().get_credentials() is None:
            # DynamoDB Local and moto accept any credentials but botocore refuses to sign without some.
            env.update(AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local")
        return env

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def empty(self, deployment: LocalDeployment) -> None:
        """The tables, emptied item by item: a table deleted on a real endpoint takes a while to go."""
        empty_tables(deployment, self.endpoint_url)


def table_arguments(deployment: LocalDeployment) -> list[dict[str, Any]]:
    """CreateTable's arguments for the deployment's tables: the counter and idempotency tables, and the series and
    workers tables when configured (the stack's definitions). Every backend makes and empties these."""
    arguments = [
        create_table_arguments(deployment.counter_table, COUNTER_KEY),
        create_table_arguments(deployment.idempotency_table, IDEMPOTENCY_KEY),
    ]
    for sorted_table in (deployment.series_table, deployment.workers_table):  # the one shape (tickets/tables.py)
        if sorted_table is not None:
            arguments.append(create_series_table_arguments(sorted_table))
    return arguments


def _dynamodb(**arguments: Any) -> Any:
    """A DynamoDB client for setting the tables up, from a session that shares botocore's parsed models with the
    handler's client (tickets.botocore_session): a server's start pays for them once, not twice."""
    return new_session().create_client("dynamodb", **arguments)


def ensure_tables(deployment: LocalDeployment, endpoint_url: str | None) -> None:
    """Create the counter and idempotency tables (and the series table, when series are configured) if
    missing; reuse them if present."""
    client = _dynamodb(region_name=deployment.region, endpoint_url=endpoint_url, config=_SETUP_CONFIG)
    where = endpoint_url or "moto"
    try:
        for arguments in table_arguments(deployment):
            _ensure_table(client, arguments)
        _enable_ttl(client, deployment.idempotency_table)
    except (BotoCoreError, ClientError) as err:
        raise BackendError(f"cannot prepare the tables at {where}: {err}") from None
    except WaiterError:
        raise BackendError(f"the tables at {where} did not become ACTIVE within a minute") from None


def _ensure_table(client: Any, arguments: dict[str, Any]) -> None:
    name = arguments["TableName"]
    status = None  # the table's, when an answer gave it
    try:
        table = client.describe_table(TableName=name)["Table"]
    except ClientError as err:
        if err.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        try:
            status = client.create_table(**arguments)["TableDescription"].get("TableStatus")
            log.info("created table %s", name)
        except ClientError as create_err:
            if create_err.response["Error"]["Code"] != "ResourceInUseException":
                raise  # ResourceInUse: another server created it a moment ago, which is fine
    else:
        status = table.get("TableStatus")
        expected = arguments["KeySchema"]
        if table.get("KeySchema") != expected:
            raise BackendError(
                f"table {name} exists with key schema {table.get('KeySchema')}, but the "
                f"handler needs {expected}; delete it or point the server elsewhere"
            )
        log.info("reusing table %s", name)
    if status != "ACTIVE":  # a new table is CREATING for a while in DynamoDB (moto's and dynalite's are not)
        client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})


def _enable_ttl(client: Any, name: str) -> None:
    """Expire idempotency records as the stack's table does; optional where unsupported."""
    try:
        status = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if status.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
            return
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": IDEMPOTENCY_TTL}
        )
    except ClientError as err:
        log.warning(
            "this DynamoDB does not support TTL (%s); idempotency records will not expire, which only costs storage",
            err.response["Error"]["Code"],
        )


def empty_tables(deployment: LocalDeployment, endpoint_url: str | None) -> None:
    """Delete every item of the deployment's tables (table_arguments; the tables stay)."""
    client = _dynamodb(region_name=deployment.region, endpoint_url=endpoint_url, config=_SETUP_CONFIG)
    for arguments in table_arguments(deployment):
        table, keys = arguments["TableName"], [key["AttributeName"] for key in arguments["KeySchema"]]
        names = {f"#k{index}": key for index, key in enumerate(keys)}
        for page in client.get_paginator("scan").paginate(
            TableName=table, ProjectionExpression=", ".join(names), ExpressionAttributeNames=names, ConsistentRead=True
        ):
            items = page["Items"]
            for first in range(0, len(items), _BATCH_WRITE_LIMIT):
                _delete_all(client, table, items[first : first + _BATCH_WRITE_LIMIT])


def _delete_all(client: Any, table: str, keys: list[dict[str, Any]]) -> None:
    requests = [{"DeleteRequest": {"Key": key}} for key in keys]
    while requests:  # a batch may leave some unprocessed (throttling); send those again
        answer = client.batch_write_item(RequestItems={table: requests})
        requests = answer.get("UnprocessedItems", {}).get(table, [])
