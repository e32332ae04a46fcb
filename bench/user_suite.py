"""A user's suite of single-ticket tests (bench/README.md, `user_suite_tests_per_s`), run by bench/local.py with
`-p bench.user_suite` (these hooks time it); with SUITE_BARE, against the bare server instead, and with
SUITE_HTTPSERVER on pytest-httpserver (`-p pytest_httpserver`), each test declaring the answer it gets."""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bench import RESULTS

SUITE_TESTS, SUITE_BARE = "TICKETS_BENCH_SUITE_TESTS", "TICKETS_BENCH_SUITE_BARE"
SUITE_HTTPSERVER = "TICKETS_BENCH_SUITE_HTTPSERVER"
_began: list[float] = []  # when each test's setup began
_ended: list[float] = []  # when each test's teardown ended


TESTS = range(int(os.environ.get(SUITE_TESTS, "10")))


def kind_of(variables: Mapping[str, str]) -> str:
    """Which suite these variables ask for: the bare server's, pytest-httpserver's or the plugin's."""
    return "bare" if variables.get(SUITE_BARE) else "httpserver" if variables.get(SUITE_HTTPSERVER) else "plugin"


KIND = kind_of(os.environ)


class _BareClient:
    """`next()` as a GET to the bare server, which answers every request alike."""

    def __init__(self, address: str):
        self._connection = http.client.HTTPConnection(address, timeout=10)

    def next(self, key: str) -> list[Any]:
        self._connection.request("GET", f"/{key}")
        return [json.loads(self._connection.getresponse().read())["ticket"]]


if KIND == "bare":
    # A session's connection, handed out by a fixture per test; no reset (the server answers every request alike).
    @pytest.fixture(scope="session")
    def _bare_client() -> _BareClient:
        return _BareClient(os.environ[SUITE_BARE])

    @pytest.fixture
    def bare_client(_bare_client: _BareClient) -> _BareClient:
        return _bare_client

    @pytest.mark.parametrize("test", TESTS)
    def test_a_new_counter_starts_at_one(bare_client: _BareClient, test: int) -> None:
        assert bare_client.next("orders") == [1]

elif KIND == "httpserver":
    # As pytest-httpserver's README writes one, with http.client in place of requests: the answer declared in the test
    # (its fixture clears the server before each), asked on a new connection (its Werkzeug server, a thread of this
    # process, speaks HTTP/1.0: one request a connection).
    @pytest.mark.parametrize("test", TESTS)
    def test_a_new_counter_starts_at_one(httpserver: Any, test: int) -> None:
        httpserver.expect_request("/orders").respond_with_json({"key": "orders", "ticket": 1})
        connection = http.client.HTTPConnection(httpserver.host, httpserver.port, timeout=10)
        connection.request("GET", "/orders")
        assert json.loads(connection.getresponse().read())["ticket"] == 1
        connection.close()

else:
    # As docs/how-to/test-your-code.md writes it: the plugin's client, its server reset before the test.
    @pytest.mark.parametrize("test", TESTS)
    def test_a_new_counter_starts_at_one(tickets_fresh_client: Any, test: int) -> None:
        assert tickets_fresh_client.next("orders") == [1]


def pytest_runtest_logstart() -> None:
    _began.append(time.perf_counter())


def pytest_runtest_logfinish() -> None:
    _ended.append(time.perf_counter())


def pytest_sessionfinish() -> None:
    """The figures: the first test (with the servers' start) and the last (with their stop, as the session's
    fixtures end) apart from the rest, whose rate is the suite's."""
    if RESULTS in os.environ and len(_began) > 2:
        rest = _began[-1] - _began[1]  # the tests between the first and the last, each whole
        figures = {
            "user_suite_kind": KIND,  # which branch above ran: bench/local.py checks it
            "user_suite_tests": len(_ended),
            "user_suite_start_s": _ended[0] - _began[0],
            "user_suite_stop_s": _ended[-1] - _began[-1],
            "user_suite_s": rest,
            "user_suite_tests_per_s": (len(_began) - 2) / rest,
        }
        Path(os.environ[RESULTS]).write_text(json.dumps(figures))
