"""pytest fixtures for testing your code against Tickets, without AWS (the package's `testing` extra; docs/testing.md).

Registered through the `pytest11` entry point: installing the package is all it takes.

- `tickets_config` (session): cdk.json's `tickets` object for the server, as a dict. Override it in
  your conftest.py to serve your deployment's counters; the default is DEFAULT_CONFIG.
- `tickets_server` (session): the real handler behind a local Function URL on an embedded DynamoDB, in
  a process of its own (tickets_local.testing.LocalTickets): `.url`, `.reset()`.
- `tickets_client` (session): a `tickets_client.client.TicketsClient` for it (the `tickets-client`
  package), one keep-alive connection for the whole session.
- `tickets_servers` (session): a factory, `tickets_servers(config, region=None, endpoint_url=None)`,
  for tests that need several configs, regions or endpoints; each distinct server starts once and
  stops with the session.

Your process is left alone: botocore is not patched, the environment is not changed, and your own
`mock_aws` sees none of the server's tables. Nothing is imported beyond pytest and the standard
library until a fixture is used.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tickets_client.client import TicketsClient
    from tickets_local.testing import LocalTickets

ServerFactory = Callable[..., "LocalTickets"]


@pytest.fixture(scope="session")
def tickets_config() -> dict[str, Any]:
    """cdk.json's `tickets` object for `tickets_server`; override it to serve your own config."""
    from tickets_local.testing import DEFAULT_CONFIG

    return copy.deepcopy(DEFAULT_CONFIG)  # a copy a test may change without changing the default


@pytest.fixture(scope="session")
def tickets_servers() -> Iterator[ServerFactory]:
    """`tickets_servers(config, region=None, endpoint_url=None)`: a running LocalTickets, started on
    the first call with those arguments and stopped at the end of the session."""
    from tickets_local.testing import LocalTickets

    running: dict[tuple[str, str | None, str | None], LocalTickets] = {}

    def server(config: Mapping[str, Any], region: str | None = None, endpoint_url: str | None = None) -> LocalTickets:
        key = (json.dumps(config, sort_keys=True), region, endpoint_url)
        if key not in running:
            running[key] = LocalTickets(config, region=region, endpoint_url=endpoint_url).start()
        return running[key]

    try:
        yield server
    finally:
        for started in running.values():
            started.ask_to_stop()
        for started in running.values():
            started.stop()


@pytest.fixture(scope="session")
def tickets_server(tickets_servers: ServerFactory, tickets_config: dict[str, Any]) -> LocalTickets:
    """The real handler behind a local Function URL, serving `tickets_config`: `.url`, `.reset()`."""
    return tickets_servers(tickets_config)


@pytest.fixture(scope="session")
def tickets_client(tickets_server: LocalTickets) -> TicketsClient:
    """A TicketsClient for `tickets_server` (from the `tickets-client` package)."""
    try:
        from tickets_client.client import TicketsClient
    except ImportError:
        pytest.fail(
            "the tickets_client fixture needs the Python client: pip install tickets-client "
            "(from the Tickets repository: pip install ./clients/python)",
            pytrace=False,
        )
    return TicketsClient(tickets_server.url)
