"""The client's block lease against the local server (tickets_local) over real HTTP on 127.0.0.1, and the test kit
as a suite runs it (bench/README.md says what each figure times). Runs in a child process (bench.child)."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from http.client import HTTPConnection
from typing import Any, NamedTuple

from tickets_client.client import MAX_BLOCK, Block, TicketsClient
from tickets_client.lease import TicketLease
from tickets_local.server import LocalServer
from tickets_local.testing import LocalTickets

from . import user_suite
from .child import results_of
from .environment import REPO, bench_config
from .series import rate, seconds_of

PER_REQUEST_SECONDS = 2.0
LEASE_START_BLOCK = 1000  # the lease's block_size: where its sizing starts
LEASE_WARM_UP_SECONDS, LEASE_SECONDS, HANDOUT_CEILING_SECONDS = 2.0, 5.0, 2.0
_CHUNK = 1000  # tickets taken between two looks at the clock
_ROUND = 50  # requests of one kind in a row, then the next kind's


def measure() -> dict:
    with LocalServer(config=bench_config(), port=0) as server:
        figures = _lease(server.url)
    # The lease with blocks from memory, the server closed: what the lease alone hands out when a block costs nothing.
    lease = TicketLease(_InstantBlocks(), "in-memory", block_size=LEASE_START_BLOCK)
    ceiling = _drain(lease, HANDOUT_CEILING_SECONDS)
    lease.close()
    return {**figures, "lease_handout_ceiling_per_s": ceiling.taken / ceiling.seconds, **measure_test_kit()}


def measure_test_kit(keep_alive_requests=600, user_suite_tests=500, resets=200, user_suite_runs=5) -> dict:
    """The server as a test suite runs it (LocalTickets, a process of its own), beside a bare stdlib server."""
    with _bare_server() as bare:
        with LocalTickets(bench_config()) as server:
            figures = {**_keep_alive(server.url, bare, keep_alive_requests), **_resets(server, resets)}
        # A suite's rate swings by a fifth from one run to the next here (bench/README.md): runs of ours, of the bare
        # server's and of pytest-httpserver's alternate, and each figure is its runs' median.
        kinds: list[dict[str, Any]] = [{}, {"bare": bare}, {"stub": True}]  # ours, the bare server, pytest-httpserver
        runs = [[_user_suite(user_suite_tests, **kind) for kind in kinds] for _ in range(user_suite_runs)]
        rates = [ours["user_suite_tests_per_s"] for ours, _, _ in runs]
        figures.update(runs[rates.index(_percentile(rates, 0.50))][0])
        figures["user_suite_runs"] = [round(rate) for rate in rates]
        for name, index in (("user_suite_bare_tests_per_s", 1), ("user_suite_httpserver_tests_per_s", 2)):
            figures[name] = _percentile([run[index]["user_suite_tests_per_s"] for run in runs], 0.50)
    return figures


@contextlib.contextmanager
def _bare_server() -> Iterator[str]:
    """bench/bare_server.py in a process of its own, as the test kit's server is; yields its host:port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.bare_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO
    )
    try:
        yield f"127.0.0.1:{int(process.stdout.readline())}"
    finally:
        process.stdin.close()  # it stops when its standard input closes
        process.wait(timeout=10)


def _keep_alive(url: str, bare: str, requests: int) -> dict:
    """`next()` with and without its Idempotency-Key, and a bare GET, interleaved in rounds (`keep_alive_ratio`)."""
    client = TicketsClient(url)
    client.next("bench-keep-alive")  # the connection opens here, and the key's item is created
    connection = HTTPConnection(bare, timeout=10)

    def get() -> None:
        connection.request("GET", "/bench-keep-alive")
        connection.getresponse().read()

    calls: dict[str, Callable[[], Any]] = {
        "keyed": lambda: client.next("bench-keep-alive"),
        "unkeyed": lambda: client.next("bench-keep-alive", idempotent=False),
        "bare": get,
    }
    latencies: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(requests // _ROUND):
        for name, call in calls.items():
            latencies[name] += [seconds_of(call) for _ in range(_ROUND)]
    connection.close()
    p50 = {name: _percentile(values, 0.50) for name, values in latencies.items()}
    return {
        "keep_alive_requests": len(latencies["keyed"]),
        "keep_alive_p50_ms": 1000 * p50["keyed"],
        "keep_alive_p99_ms": 1000 * _percentile(latencies["keyed"], 0.99),
        "keep_alive_unkeyed_p50_ms": 1000 * p50["unkeyed"],
        "bare_get_p50_ms": 1000 * p50["bare"],
        "keep_alive_ratio": p50["keyed"] / p50["bare"],
    }


def _resets(server: Any, resets: int) -> dict:
    """`reset()` and the `next()` after it against a `next()` alone, alternating (`reset_p50_ms`)."""
    client = TicketsClient(server.url)
    timed: dict[str, list[float]] = {"call": [], "after": [], "alone": []}
    for _ in range(resets):
        client.next("bench-reset")
        began = time.perf_counter()
        server.reset()
        timed["call"].append(time.perf_counter() - began)
        first = client.next("bench-reset")
        timed["after"].append(time.perf_counter() - began)
        if first != [1]:
            raise AssertionError(f"after a reset, the first ticket of a key is {first}, not [1]")
        timed["alone"].append(seconds_of(lambda: client.next("bench-reset")))
    p50 = {name: 1000 * _percentile(values, 0.50) for name, values in timed.items()}
    return {
        "reset_p50_ms": p50["after"] - p50["alone"],  # the test's wait: reset() and what the next request pays more
        "reset_call_p50_ms": p50["call"],
        "reset_next_p50_ms": p50["after"],
        "reset_alone_p50_ms": p50["alone"],
    }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _user_suite(tests: int, bare: str = "", stub: bool = False) -> dict:
    """bench/user_suite.py's `tests` tests through the pytest plugin in a process of their own (or against `bare`,
    or on pytest-httpserver: `stub`)."""
    variables = {user_suite.SUITE_TESTS: str(tests), user_suite.SUITE_BARE: bare}
    variables[user_suite.SUITE_HTTPSERVER] = "1" if stub else ""
    pytest = ["-m", "pytest", "-p", "bench.user_suite", "-p", "no:cacheprovider", "-q", "bench/user_suite.py"]
    pytest += ["-p", "pytest_httpserver"] if stub else []  # pyproject.toml's addopts turn it off
    figures = results_of(pytest, {**os.environ, **variables})
    if figures.pop("user_suite_kind") != (asked := user_suite.kind_of(variables)):
        raise AssertionError(f"bench/user_suite.py ran another suite than the {asked} one asked for")
    return figures


def _lease(url: str) -> dict:
    client = TicketsClient(url)
    block_latencies = [seconds_of(lambda: client.block("bench-block", MAX_BLOCK, idempotent=False)) for _ in range(5)]
    issued: list[int] = []
    per_request = rate(lambda: issued.extend(client.next("bench-per-request")), PER_REQUEST_SECONDS)
    if any(b <= a for a, b in zip(issued, issued[1:])):
        raise AssertionError("one request per ticket: tickets did not increase")
    lease = TicketLease(client, "bench-lease", block_size=LEASE_START_BLOCK)
    warm_up = _drain(lease, LEASE_WARM_UP_SECONDS)
    sustained = _drain(lease, LEASE_SECONDS, warm_up.next_ticket)
    settled, sizes = lease.current_block_size, lease.block_sizes
    unused = lease.close()
    return {
        "per_request_tickets_per_s": per_request,
        "lease_tickets_per_s": sustained.taken / sustained.seconds,
        "lease_seconds": round(sustained.seconds, 2),
        "lease_warm_up_tickets_per_s": warm_up.taken / warm_up.seconds,
        "lease_warm_up_seconds": round(warm_up.seconds, 2),
        "lease_start_block": LEASE_START_BLOCK,
        "lease_block_size_settled": settled,
        "lease_block_sizes": dict(sorted(sizes.items())),
        "lease_unused_at_close": unused,
        "lease_block_request_ms": 1000 * statistics.median(block_latencies),
        "lease_block_request_count": MAX_BLOCK,
    }


class _InstantBlocks:
    def __init__(self) -> None:
        self._last = 0

    def block(self, key: Any, count: int, *, idempotent: bool = True) -> Block:
        self._last += count
        return Block(self._last - count + 1, self._last, 1, count)


class _Drained(NamedTuple):
    taken: int
    seconds: float
    next_ticket: int


def _drain(lease: Any, seconds: float, first: int | None = None) -> _Drained:
    """Take tickets from `lease` for `seconds`, each chunk checked to be consecutive (the key's only consumer)."""
    taken, take = 0, lease.next
    began = time.perf_counter()
    while time.perf_counter() < began + seconds:
        chunk = [take() for _ in range(_CHUNK)]
        first = chunk[0] if first is None else first
        if chunk != list(range(first + taken, first + taken + _CHUNK)):
            raise AssertionError("the lease skipped, repeated or reordered tickets")
        taken += _CHUNK
    return _Drained(taken, time.perf_counter() - began, (1 if first is None else first) + taken)
