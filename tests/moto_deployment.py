"""The real handler, called with Function URL 2.0 events, on moto's DynamoDB: the functional tier's
fixtures (tests/functional/conftest.py) and the stateful models (tests/models) build on it.

`Region(config, region)` is one region's deployment: the app built by `create_app` with that region's
settings (exactly what the stack gives the function) and its own tables in moto (the caller holds
`mock_aws` open; the fixture `deploy` does), or in the local server's memory backend (tickets_local.memory) when
given one: a module whose tests are backend-generic runs them on both (`EVERY_BACKEND = True`, the functional
tier's conftest.py).
`Region.call(...)` builds an event from `fixtures/function_url_event.json` and returns the status, headers and
parsed body.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from common import EXAMPLE_CONFIG
from tickets.app import App, create_app, dynamodb_client
from tickets.opaque.secret import StoredKeys
from tickets.tables import (
    COUNTER_KEY,
    IDEMPOTENCY_KEY,
    create_series_table_arguments,
    create_table_arguments,
)
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_local.events import event_from
from tickets_local.memory import MemoryDynamoDB
from tickets_local.server import LambdaContext

EVENT_TEMPLATE = json.loads((Path(__file__).parent / "fixtures" / "function_url_event.json").read_text())
# The keys of opaque ids a Region's function holds (a key per version, fixed: no test depends on a random draw), as
# the function reads them from its SSM parameter: the key file's format (tickets.opaque.parse_keys).
OPAQUE_KEYS = {version: bytes(range(32 * version, 32 * version + 32)) for version in (1, 2, 3)}
OPAQUE_KEYS_TEXT = json.dumps({str(version): base64.b64encode(key).decode() for version, key in OPAQUE_KEYS.items()})
COUNTER_TABLE = "tickets-test"
IDEMPOTENCY_TABLE = "tickets-idempotency-test"
SERIES_TABLE = "tickets-test-series"
BACKENDS = ("moto", "memory")
WORKERS_TABLE = "tickets-test-workers"


@dataclass
class FakeLambdaContext(LambdaContext):
    """The local server's Lambda context (tickets_local.server), whose time does not run out: a test's
    request always has the function's whole budget left, however slow the machine."""

    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:tickets-test"
    function_name: str = "tickets-test"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any  # the parsed JSON, or the text of a text/plain answer


def function_url_event(
    path: str = "/",
    method: str = "GET",
    query: Any = None,
    headers: dict[str, str] | None = None,
    body: str | bytes | None = None,
    base64_body: bool = False,
    iam: dict[str, Any] | None = None,
) -> dict:
    """A payload 2.0 event as a Function URL sends it, from fixtures/function_url_event.json: the
    local server's and the bench's builder (tickets_local.events.event_from), which says the rest.
    `iam`: the signer as the URL's IAM authorizer describes it (requestContext.authorizer.iam), if not
    the template's."""
    return event_from(EVENT_TEMPLATE, path, method, query, headers, body, base64_body, iam)


@functools.cache
def test_client(region: str):
    """The tests' own client: clients are slow to make, and moto intercepts one made once."""
    return boto3.client("dynamodb", region_name=region)


@functools.cache
def function_client(region: str):
    """The function's client, made as the Lambda makes it (tickets.app.dynamodb_client), once per region."""
    return dynamodb_client(region_name=region)


class _Recorded:
    """The memory backend's client, noting each call's (operation, table) while `calls` is a list, as
    Region.dynamodb_calls notes botocore's."""

    def __init__(self, client: MemoryDynamoDB):
        self._client = client
        self.calls: list[tuple[str, str | None]] | None = None

    def __getattr__(self, operation: str) -> Any:
        call = getattr(self._client, operation)

        def recorded(**request: Any) -> Any:
            if self.calls is not None:
                self.calls.append(("".join(part.title() for part in operation.split("_")), request.get("TableName")))
            return call(**request)

        return recorded


class Region:
    """One region's deployment: its app, built by create_app as the function builds it, and its tables in moto
    (or in `memory`, one region's tables of the memory backend, which the tests and the function share)."""

    def __init__(self, config: dict, region: str, memory: MemoryDynamoDB | None = None):
        self.region = region
        self.config = parse_config(config)
        self.settings = region_settings(self.config, region)  # what the stack puts in the function's environment
        self.memory = None if memory is None else _Recorded(memory)
        self.client = test_client(region) if memory is None else memory
        self.function_client = function_client(region) if self.memory is None else self.memory
        self.shuffle: Any = None  # the function's lane picks: random unless a test pins them
        # The keys of opaque ids, as the function reads them (tickets.opaque.secret): a test may give others.
        self.opaque_keys = StoredKeys(lambda: OPAQUE_KEYS_TEXT, "the tests' keys")
        self._app: App | None = None
        existing = self.client.list_tables()["TableNames"] if memory is None else []
        for table, key in ((COUNTER_TABLE, COUNTER_KEY), (IDEMPOTENCY_TABLE, IDEMPOTENCY_KEY)):
            if table not in existing:
                self.client.create_table(**create_table_arguments(table, key))
        for table in (SERIES_TABLE, WORKERS_TABLE):  # the series table's shape, both
            if table not in existing:
                self.client.create_table(**create_series_table_arguments(table))

    @property
    def handler(self) -> App:
        """The function as this region runs it, built on first use: like a new execution environment,
        each Region (so each test) has its own Issuer, which remembers exhausted lanes."""
        if self._app is None:
            picks = {"shuffle": self.shuffle} if self.shuffle is not None else {}
            client = self.function_client
            rules = self.config.access  # the access rules, as the function reads them from the stack's parameters
            self._app = create_app(
                self.settings,
                client,
                COUNTER_TABLE,
                IDEMPOTENCY_TABLE,
                region=self.region,
                series_table=SERIES_TABLE,
                workers_table=WORKERS_TABLE,
                access=None if rules is None else (lambda: rules),
                opaque_keys=self.opaque_keys,
                **picks,
            )
        return self._app

    def pick_lanes(self, shuffle: Any) -> None:
        """Order the lanes each request tries with `shuffle` (in place) instead of at random; from the
        next call on, with a fresh Issuer."""
        self.shuffle = shuffle
        self._app = None

    def call(self, path: str = "/", method: str = "GET", **event_args: Any) -> Answer:
        result = self.handler.lambda_handler(function_url_event(path, method, **event_args), FakeLambdaContext())
        headers = result.get("headers") or {}
        text = result.get("body") or ""
        is_json = headers.get("Content-Type", "").startswith("application/json")
        return Answer(result["statusCode"], headers, json.loads(text) if is_json else text)

    def get(self, path: str = "/", **event_args: Any) -> Answer:
        return self.call(path, "GET", **event_args)

    def post(self, path: str = "/", **event_args: Any) -> Answer:
        return self.call(path, "POST", **event_args)

    def items(self, table: str = COUNTER_TABLE) -> list[dict]:
        """Every item of one of this region's tables, in a stable order, for before/after snapshots."""
        items = self.client.scan(TableName=table, ConsistentRead=True)["Items"]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))

    def put_item(self, item: dict) -> None:
        self.client.put_item(TableName=COUNTER_TABLE, Item=item)

    @contextlib.contextmanager
    def dynamodb_calls(self) -> Iterator[list[tuple[str, str | None]]]:
        """Every (operation, table) the function's own DynamoDB client sends while open."""
        calls: list[tuple[str, str | None]] = []
        if self.memory is not None:
            self.memory.calls = calls
            try:
                yield calls
            finally:
                self.memory.calls = None
            return

        def record(params: dict, model: Any, **_: Any) -> None:
            calls.append((model.name, params.get("TableName")))

        events = self.handler.dynamodb.meta.events
        events.register("provide-client-params.dynamodb", record)
        try:
            yield calls
        finally:
            events.unregister("provide-client-params.dynamodb", record)


# The fixtures of the tiers that run the handler (tests/functional, and tests/synth on the settings it
# synthesised): each tier's conftest.py imports them.


@pytest.fixture
def aws():
    """moto's in-memory AWS for the duration of one test."""
    with mock_aws():
        yield


@pytest.fixture
def backend(request) -> str:
    """Where `deploy`'s tables are: moto, unless a module asks for each of BACKENDS (`EVERY_BACKEND = True`)."""
    return getattr(request, "param", "moto")


@pytest.fixture
def deploy(aws, backend):
    """deploy(config, region) -> Region, with the app built from that cdk.json-style config, on `backend`: each
    region's tables its own, as in moto."""
    memory: dict[str, MemoryDynamoDB] = {}

    def deploy(config: dict | None = None, region: str = "us-east-1") -> Region:
        tables = memory.setdefault(region, MemoryDynamoDB()) if backend == "memory" else None
        return Region(EXAMPLE_CONFIG if config is None else config, region, tables)

    return deploy


@pytest.fixture
def api(deploy) -> Region:
    """The handler deployed with the README's example config in us-east-1."""
    return deploy()


@pytest.fixture
def dynamodb_calls(api):
    """Every (operation, table) the handler's client sends."""
    with api.dynamodb_calls() as calls:
        yield calls
