"""Shared fixtures: the real handler, called with Function URL 2.0 events, on moto's DynamoDB.

`deploy(config, region)` gives a `Region`: the app built by `create_app` with that region's
settings (exactly what the stack gives the function) and its own tables in moto.
`Region.call(...)` builds an event from `fixtures/function_url_event.json` and returns
the status, headers and parsed body.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import importlib
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

# Powertools outside Lambda, and credentials moto accepts: set before anything imports boto3.
os.environ.update(
    {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
)

import boto3  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from moto import mock_aws  # noqa: E402

from tickets_deploy.config import POWERTOOLS_ENVIRONMENT, parse_config, region_settings  # noqa: E402

# The Powertools settings the stack gives the function (service name, metrics namespace): read when
# tickets.app is imported, so set first.
os.environ.update(POWERTOOLS_ENVIRONMENT)

from tickets.app import App, create_app, dynamodb_client  # noqa: E402
from tickets.tables import (  # noqa: E402
    COUNTER_KEY,
    IDEMPOTENCY_KEY,
    create_series_table_arguments,
    create_table_arguments,
)

# CI runs the property tests on a fixed set of examples, the same on every run; a developer's run
# draws new ones (and replays any failure from .hypothesis/).
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() in ("1", "true"):
    hypothesis_settings.load_profile("ci")

EVENT_TEMPLATE = json.loads((Path(__file__).parent / "fixtures" / "function_url_event.json").read_text())
COUNTER_TABLE = "tickets-test"
IDEMPOTENCY_TABLE = "tickets-idempotency-test"
SERIES_TABLE = "tickets-test-series"
EXAMPLE_CONFIG = {  # the README's example (Configuration)
    "defaultKey": "default",
    "auth": "AWS_IAM",
    "regions": {"us-east-1": 0},
    "regionSlots": 1,
    "strictKeys": False,
    "counters": {"orders": {"start": 5000}, "invoices": {"start": 1, "stride": 10}},
}
PLUGIN_ENTRY_POINT = "tickets"  # pyproject.toml: [project.entry-points.pytest11]
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


@dataclass
class FakeLambdaContext:
    function_name: str = "tickets-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:tickets-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

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
    """A payload 2.0 event as a Function URL sends it. `query` is a dict or a list of pairs
    (pairs may repeat a name: AWS then joins the values with commas, as here); `path` is
    the raw path, still percent-encoded. A bytes body arrives base64-encoded, as AWS sends
    binary; `base64_body=True` marks a str body as base64 as it stands (even if it is not). `iam`: the
    signer as the URL's IAM authorizer describes it (requestContext.authorizer.iam), if not the template's."""
    pairs = list(query.items()) if isinstance(query, dict) else list(query or [])
    event = copy.deepcopy(EVENT_TEMPLATE)
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["requestId"] = str(uuid.uuid4())
    if iam is not None:
        event["requestContext"]["authorizer"]["iam"] = iam
    event["rawQueryString"] = urlencode(pairs)
    if pairs:
        joined: dict[str, str] = {}
        for name, value in pairs:
            joined[name] = f"{joined[name]},{value}" if name in joined else value
        event["queryStringParameters"] = joined
    event["headers"].update({name.lower(): value for name, value in (headers or {}).items()})
    if isinstance(body, bytes):
        body, base64_body = base64.b64encode(body).decode("ascii"), True
    if body is not None:
        event["body"], event["isBase64Encoded"] = body, base64_body
    return event


@functools.cache
def test_client(region: str):
    """The tests' own client: clients are slow to make, and moto intercepts one made once."""
    return boto3.client("dynamodb", region_name=region)


@functools.cache
def function_client(region: str):
    """The function's client, made as the Lambda makes it (tickets.app.dynamodb_client), once per region."""
    return dynamodb_client(region_name=region)


class Region:
    """One region's deployment: its app, built by create_app as the function builds it, and its tables in moto."""

    def __init__(self, config: dict, region: str):
        self.region = region
        self.config = parse_config(config)
        self.settings = region_settings(self.config, region)  # what the stack puts in the function's environment
        self.client = test_client(region)
        self.shuffle: Any = None  # the function's lane picks: random unless a test pins them
        self._app: App | None = None
        existing = self.client.list_tables()["TableNames"]
        for table, key in ((COUNTER_TABLE, COUNTER_KEY), (IDEMPOTENCY_TABLE, IDEMPOTENCY_KEY)):
            if table not in existing:
                self.client.create_table(**create_table_arguments(table, key))
        if SERIES_TABLE not in existing:
            self.client.create_table(**create_series_table_arguments(SERIES_TABLE))

    @property
    def handler(self) -> App:
        """The function as this region runs it, built on first use: like a new execution environment,
        each Region (so each test) has its own Issuer, which remembers exhausted lanes."""
        if self._app is None:
            picks = {"shuffle": self.shuffle} if self.shuffle is not None else {}
            client = function_client(self.region)
            rules = self.config.access  # the access rules, as the function reads them from the stack's parameters
            self._app = create_app(
                self.settings,
                client,
                COUNTER_TABLE,
                IDEMPOTENCY_TABLE,
                region=self.region,
                series_table=SERIES_TABLE,
                access=None if rules is None else (lambda: rules),
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

        def record(params: dict, model: Any, **_: Any) -> None:
            calls.append((model.name, params.get("TableName")))

        events = self.handler.dynamodb.meta.events
        events.register("provide-client-params.dynamodb", record)
        try:
            yield calls
        finally:
            events.unregister("provide-client-params.dynamodb", record)


def pytest_configure(config: pytest.Config) -> None:
    """The tests use the package's pytest plugin (tickets_local.pytest_plugin: tickets_servers and the rest).
    An install registers it under its entry point's name; a checkout run from source, here."""
    if not config.pluginmanager.has_plugin(PLUGIN_ENTRY_POINT):
        config.pluginmanager.register(importlib.import_module("tickets_local.pytest_plugin"), PLUGIN_ENTRY_POINT)


@pytest.fixture
def aws():
    """moto's in-memory AWS for the duration of one test."""
    with mock_aws():
        yield


@pytest.fixture
def deploy(aws):
    """deploy(config, region) -> Region, with the app built from that cdk.json-style config."""

    def deploy(config: dict | None = None, region: str = "us-east-1") -> Region:
        return Region(EXAMPLE_CONFIG if config is None else config, region)

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
