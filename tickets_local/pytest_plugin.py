"""The test kit's pytest fixtures (docs/how-to/test-your-code.md), registered by the `pytest11` entry point.
Nothing beyond pytest and the standard library is imported until a fixture is used."""

from __future__ import annotations

import copy
import json
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tickets_client.client import TicketsClient
    from tickets_local.testing import LocalTickets

ServerFactory = Callable[..., "LocalTickets"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tickets-backend",
        default=None,
        metavar="NAME",
        help="the Tickets test kit's DynamoDB: memory (default), moto or endpoint (docs/reference/backends.md)",
    )


@pytest.fixture(scope="session")
def tickets_config() -> dict[str, Any]:
    """cdk.json's `tickets` object for `tickets_server`; override it to serve your own config."""
    from tickets_local.testing import DEFAULT_CONFIG

    return copy.deepcopy(DEFAULT_CONFIG)  # a copy a test may change without changing the default


@pytest.fixture(scope="session")
def tickets_servers(request: pytest.FixtureRequest) -> Iterator[ServerFactory]:
    """`tickets_servers(config, region=None, endpoint_url=None, backend=None, arguments=())`: a running LocalTickets,
    started on the first call with those arguments (`arguments`: more server flags), stopped with the session."""
    from tickets_local.testing import LocalTickets

    running: dict[tuple[str, str | None, str | None, str | None, tuple[str, ...]], LocalTickets] = {}
    chosen: str | None = request.config.getoption("tickets_backend")  # not pytestconfig: a fixture less per test
    last: list[Any] = [None, None, None, None]  # the config object last asked for, the arguments, a copy, the server

    def server(
        config: Mapping[str, Any],
        region: str | None = None,
        endpoint_url: str | None = None,
        backend: str | None = None,
        arguments: Sequence[str] = (),
    ) -> LocalTickets:
        asked = (region, endpoint_url, backend, tuple(arguments))
        if config is last[0] and asked == last[1] and config == last[2]:  # a suite's every test asks alike
            served: LocalTickets = last[3]
            return served
        backend = backend or (chosen if not endpoint_url else None)
        canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))  # equal configs share a server
        key = (canonical, region, endpoint_url, backend, tuple(arguments))
        if key not in running:
            running[key] = LocalTickets(
                copy.deepcopy(dict(config)),
                region=region,
                endpoint_url=endpoint_url,
                config_name="tickets_config",  # the fixture to override, as refusals name the config
                backend=backend,
                arguments=arguments,
            ).start()
        last[:] = [config, asked, copy.deepcopy(config), running[key]]  # the copy: a test may change the config
        return running[key]

    try:
        yield server
    finally:
        for started in running.values():
            started.ask_to_stop()
        for started in running.values():
            started.stop()


@pytest.fixture
def tickets_server(tickets_servers: ServerFactory, tickets_config: Mapping[str, Any]) -> LocalTickets:
    """The server of this test's `tickets_config` (per test: each test declares its config), shared by that config."""
    return tickets_servers(tickets_config)


# These ask the pool themselves, not through tickets_server: a fixture costs pytest tens of microseconds per test.
@pytest.fixture
def tickets_fresh_server(tickets_servers: ServerFactory, tickets_config: Mapping[str, Any]) -> LocalTickets:
    """`tickets_server`, reset before this test: its counters and Idempotency-Keys start empty."""
    server = tickets_servers(tickets_config)
    server.reset()
    return server


_CLIENTS: weakref.WeakKeyDictionary[LocalTickets, TicketsClient] = weakref.WeakKeyDictionary()


@pytest.fixture
def tickets_client(tickets_servers: ServerFactory, tickets_config: Mapping[str, Any]) -> TicketsClient:
    """A TicketsClient for `tickets_server`: one per server, keeping one connection for the session."""
    server = tickets_servers(tickets_config)
    client = _CLIENTS.get(server)
    if client is None:
        try:
            from tickets_client.client import TicketsClient
        except ImportError:
            pytest.fail(
                "the tickets_client fixture needs the Python client: pip install tickets-client "
                "(from the Tickets repository: pip install ./clients/python)",
                pytrace=False,
            )
        client = _CLIENTS[server] = TicketsClient(server.url)
    return client
