"""A user's suite of single-ticket tests (bench/README.md, `user_suite_tests_per_s`), run by bench/local.py with
`-p bench.user_suite` (these hooks time it); with SUITE_BARE, against the bare server instead."""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import RESULTS

SUITE_TESTS, SUITE_BARE = "TICKETS_BENCH_SUITE_TESTS", "TICKETS_BENCH_SUITE_BARE"
_began: list[float] = []  # when each test's setup began
_ended: list[float] = []  # when each test's teardown ended


@pytest.fixture(scope="session")
def _bare_connection() -> http.client.HTTPConnection:
    return http.client.HTTPConnection(os.environ[SUITE_BARE], timeout=10)


@pytest.fixture
def first_ticket(request: pytest.FixtureRequest) -> Callable[[], Any]:
    if os.environ.get(SUITE_BARE):
        connection = request.getfixturevalue("_bare_connection")

        def bare() -> Any:
            connection.request("GET", "/orders")
            return [json.loads(connection.getresponse().read())["ticket"]]

        return bare
    request.getfixturevalue("tickets_fresh_server")
    client = request.getfixturevalue("tickets_client")
    return lambda: client.next("orders")


@pytest.mark.parametrize("test", range(int(os.environ.get(SUITE_TESTS, "10"))))
def test_a_new_counter_starts_at_one(first_ticket: Callable[[], Any], test: int) -> None:
    assert first_ticket() == [1]


def pytest_runtest_logstart() -> None:
    _began.append(time.perf_counter())


def pytest_runtest_logfinish() -> None:
    _ended.append(time.perf_counter())


def pytest_sessionfinish() -> None:
    """The figures, the first test (with the server's start) apart from the rest."""
    if RESULTS in os.environ and len(_ended) > 1:
        rest = _ended[-1] - _began[1]
        figures = {
            "user_suite_tests": len(_ended),
            "user_suite_start_s": _ended[0] - _began[0],
            "user_suite_s": rest,
            "user_suite_tests_per_s": (len(_ended) - 1) / rest,
        }
        Path(os.environ[RESULTS]).write_text(json.dumps(figures))
