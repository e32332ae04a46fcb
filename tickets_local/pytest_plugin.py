"""pytest fixtures for testing your code against Tickets, without AWS (the package's `testing` extra), registered
through the `pytest11` entry point: `tickets_config`, `tickets_servers` (the pool, one server per distinct config,
region, endpoint and backend), `tickets_server`, `tickets_fresh_server` (reset before the test) and `tickets_client`;
docs/how-to/test-your-code.md says what each gives and how to override the config.

Your process is left alone: botocore is not patched, the environment is not changed, and your own `mock_aws` sees none
of the server's tables. Nothing is imported beyond pytest and the standard library until a fixture is used.
"""

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
# What the servers' answers call their config: the fixture a test overrides (a key strictKeys refuses names it).
CONFIG_NAME = "tickets_config"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tickets-backend",
        default=None,
        metavar="NAME",
        help="the DynamoDB behind the Tickets test kit's servers: memory (the default), moto, or endpoint with "
        "a server's endpoint_url (docs/reference/backends.md)",
    )


@pytest.fixture(scope="session")
def tickets_config() -> dict[str, Any]:
    """cdk.json's `tickets` object for `tickets_server`; override it to serve your own config."""
    from tickets_local.testing import DEFAULT_CONFIG

    return copy.deepcopy(DEFAULT_CONFIG)  # a copy a test may change without changing the default


@pytest.fixture(scope="session")
def tickets_servers(request: pytest.FixtureRequest) -> Iterator[ServerFactory]:
    """`tickets_servers(config, region=None, endpoint_url=None, backend=None, arguments=())`: a running
    LocalTickets, started on the first call with those arguments and stopped at the end of the session.
    `arguments`: more of the server's flags, such as `--without-ledger` for tables on an endpoint
    (docs/reference/local-server.md)."""
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
                config_name=CONFIG_NAME,
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
    """The server for this test's `tickets_config`, shared by every test of that config: `.url`, `.reset()`.
    Per test (not per session), so that each test gets the server of the config it declares."""
    return tickets_servers(tickets_config)


# tickets_fresh_server and tickets_client ask the pool themselves rather than through tickets_server: each fixture a
# test goes through costs pytest tens of microseconds, a sizeable part of a single-ticket test (bench/README.md).
@pytest.fixture
def tickets_fresh_server(tickets_servers: ServerFactory, tickets_config: Mapping[str, Any]) -> LocalTickets:
    """`tickets_server`, reset before this test: its counters and Idempotency-Keys start empty."""
    server = tickets_servers(tickets_config)
    server.reset()
    return server


_CLIENTS: weakref.WeakKeyDictionary[LocalTickets, TicketsClient] = weakref.WeakKeyDictionary()


@pytest.fixture
def tickets_client(tickets_servers: ServerFactory, tickets_config: Mapping[str, Any]) -> TicketsClient:
    """A TicketsClient for `tickets_server` (from the `tickets-client` package): one per server, and one keep-alive
    connection with it, for the session."""
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
