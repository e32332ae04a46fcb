"""The test kit's pytest fixtures (docs/how-to/test-your-code.md), registered by the `pytest11` entry point.
Nothing beyond pytest and the standard library is imported until a fixture is used."""

from __future__ import annotations

import copy
import json
import weakref
from collections.abc import Callable, Mapping, Sequence
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


class _Pool:
    """`pool(config, region=None, endpoint_url=None, backend=None, arguments=())`: a running LocalTickets, started on
    the first call with those arguments (`arguments`: more server flags); stop() ends them all."""

    def __init__(self, backend: str | None):
        self.running: dict[tuple[str, str | None, str | None, str | None, tuple[str, ...]], LocalTickets] = {}
        self.backend = backend  # --tickets-backend
        # The config object last asked for, the arguments, a copy of the config, the server.
        self.last: list[Any] = [None, None, None, None]

    def __call__(
        self,
        config: Mapping[str, Any],
        region: str | None = None,
        endpoint_url: str | None = None,
        backend: str | None = None,
        arguments: Sequence[str] = (),
    ) -> LocalTickets:
        asked, last = (region, endpoint_url, backend, tuple(arguments)), self.last
        if config is last[0] and asked == last[1] and config == last[2]:  # a suite's every test asks alike
            served: LocalTickets = last[3]
            return served
        from tickets_local.testing import LocalTickets

        backend = backend or (self.backend if not endpoint_url else None)
        canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))  # equal configs share a server
        key = (canonical, region, endpoint_url, backend, tuple(arguments))
        if key not in self.running:
            self.running[key] = LocalTickets(
                copy.deepcopy(dict(config)),
                region=region,
                endpoint_url=endpoint_url,
                config_name="tickets_config",  # the fixture to override, as refusals name the config
                backend=backend,
                arguments=arguments,
            ).start()
        last[:] = [config, asked, copy.deepcopy(config), self.running[key]]  # the copy: a test may change the config
        return self.running[key]

    def stop(self) -> None:
        for started in self.running.values():
            started.ask_to_stop()
        for started in self.running.values():
            started.stop()


_POOL = pytest.StashKey[_Pool]()


def _pool(request: pytest.FixtureRequest) -> _Pool:
    """The session's servers, kept on its config: a fixture asking for them is `request` (pytest's cheapest), not a
    fixture more per test (bench/README.md's user suite). They stop with the session's fixtures."""
    config = request.config
    pool = config.stash.get(_POOL, None)
    if pool is None:
        pool = config.stash[_POOL] = _Pool(config.getoption("tickets_backend"))

        def stop() -> None:
            del config.stash[_POOL]
            pool.stop()

        request.session.addfinalizer(stop)
    return pool


@pytest.fixture(scope="session")
def tickets_servers(request: pytest.FixtureRequest) -> ServerFactory:
    """`tickets_servers(config, region=None, endpoint_url=None, backend=None, arguments=())`: a running LocalTickets,
    started on the first call with those arguments (`arguments`: more server flags), stopped with the session."""
    return _pool(request)


@pytest.fixture
def tickets_server(request: pytest.FixtureRequest, tickets_config: Mapping[str, Any]) -> LocalTickets:
    """The server of this test's `tickets_config` (per test: each test declares its config), shared by that config."""
    return _pool(request)(tickets_config)


# These ask the pool themselves, not through tickets_server: a fixture costs pytest tens of microseconds per test.
@pytest.fixture
def tickets_fresh_server(request: pytest.FixtureRequest, tickets_config: Mapping[str, Any]) -> LocalTickets:
    """`tickets_server`, reset before this test: its counters and Idempotency-Keys start empty."""
    server = _pool(request)(tickets_config)
    server.reset()
    return server


_CLIENTS: weakref.WeakKeyDictionary[LocalTickets, TicketsClient] = weakref.WeakKeyDictionary()


@pytest.fixture
def tickets_client(request: pytest.FixtureRequest, tickets_config: Mapping[str, Any]) -> TicketsClient:
    """A TicketsClient for `tickets_server`: one per server, keeping one connection for the session."""
    return _client_of(_pool(request)(tickets_config))


@pytest.fixture
def tickets_fresh_client(request: pytest.FixtureRequest, tickets_config: Mapping[str, Any]) -> TicketsClient:
    """`tickets_client`, its server reset before this test: `tickets_fresh_server` and `tickets_client` in one."""
    server = _pool(request)(tickets_config)
    server.reset()
    return _client_of(server)


def _client_of(server: LocalTickets) -> TicketsClient:
    client = _CLIENTS.get(server)
    if client is None:
        try:
            from tickets_client.client import TicketsClient
        except ImportError:
            pytest.fail(
                "the tickets_client fixtures need the Python client: pip install tickets-client "
                "(from the Tickets repository: pip install ./clients/python)",
                pytrace=False,
            )
        client = _CLIENTS[server] = TicketsClient(server.url)
    return client
