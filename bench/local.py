"""The local server (tickets_local) over real HTTP on 127.0.0.1, and the client's block lease.

- load: 16 threads, each on its own keep-alive connection, ask one key for single tickets
  for a fixed time; every ticket is collected, so duplicates are counted, not assumed.
- per request: one thread, one `TicketsClient.next()` (one HTTP request) per ticket.
- lease: one thread takes tickets from `TicketLease` (range blocks from /_blocks, sized by the
  lease itself from LEASE_START_BLOCK up, prefetched in the background): a warm-up while the
  lease grows its blocks, then the sustained rate over LEASE_SECONDS, every ticket checked
  (consecutive: the lease is the key's only consumer). Reported beside it: the block sizes the
  lease took and settled on, the tickets it left unused at close, the latency of one request
  for the largest block, and the rate at which the lease hands out tickets when blocks cost
  nothing (a block source in memory).
- keep-alive: one `TicketsClient` (one keep-alive connection), `next()` one ticket at a time: the
  latency of each call, p50 and p99, as a test calling the local server sees it; then the same
  without an Idempotency-Key.
- user suite: what a test suite pays with the test kit's server (tickets_local.testing.LocalTickets,
  a process of its own): its start-up, until it listens; USER_SUITE_TESTS single-ticket "tests"
  through one shared client, each on a key of its own whose first ticket it checks; then one
  reset() of what the suite and the keep-alive calls left.
Runs in a child process (bench.child).
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .environment import bench_config

LOAD_THREADS = 16
LEASE_START_BLOCK = 1000  # the lease's block_size: where its sizing starts
LEASE_WARM_UP_SECONDS = 2.0
LEASE_SECONDS = 5.0  # the sustained figure: at least 5 s of hand-outs
_CHUNK = 1000  # tickets taken between two looks at the clock
KEEP_ALIVE_REQUESTS = 500
USER_SUITE_TESTS = 200


def measure(
    load_seconds: float = 4.0,
    per_request_seconds: float = 2.0,
    lease_seconds: float = LEASE_SECONDS,
    lease_warm_up_seconds: float = LEASE_WARM_UP_SECONDS,
    handout_ceiling_seconds: float = 2.0,
    keep_alive_requests: int = KEEP_ALIVE_REQUESTS,
    user_suite_tests: int = USER_SUITE_TESTS,
) -> dict:
    from tickets_local.server import LocalServer

    with LocalServer(config=bench_config(), port=0) as server:
        figures = _load(server.url, load_seconds)
        figures.update(_per_request(server.url, per_request_seconds))
        figures.update(_lease(server.url, lease_seconds, lease_warm_up_seconds))
    figures.update(_lease_handout_ceiling(handout_ceiling_seconds))
    figures.update(measure_test_kit(keep_alive_requests, user_suite_tests))
    return figures


def measure_test_kit(keep_alive_requests: int = KEEP_ALIVE_REQUESTS, user_suite_tests: int = USER_SUITE_TESTS) -> dict:
    """The local server as a test suite runs it: in a process of its own (LocalTickets), from cdk.json's config."""
    from tickets_local.testing import LocalTickets

    began = time.perf_counter()
    with LocalTickets(bench_config()) as server:
        started = time.perf_counter() - began
        figures = _user_suite(server.url, user_suite_tests, started)
        figures.update(_keep_alive(server.url, keep_alive_requests))
        began = time.perf_counter()  # the tables now hold the suite's counters and idempotency records
        server.reset()
        figures["user_suite_reset_ms"] = 1000 * (time.perf_counter() - began)
    return figures


def _keep_alive(url: str, requests: int) -> dict:
    from tickets_client.client import TicketsClient

    client = TicketsClient(url)
    client.next("bench-keep-alive")  # the connection opens here, and the key's item is created
    latencies = []
    for _ in range(requests):
        began = time.perf_counter()
        client.next("bench-keep-alive")
        latencies.append(time.perf_counter() - began)
    # The same without an Idempotency-Key: the server then skips the idempotency record's two writes.
    unkeyed = []
    for _ in range(requests):
        began = time.perf_counter()
        client.next("bench-keep-alive", idempotent=False)
        unkeyed.append(time.perf_counter() - began)
    return {
        "keep_alive_requests": requests,
        "keep_alive_p50_ms": 1000 * _percentile(latencies, 0.50),
        "keep_alive_p99_ms": 1000 * _percentile(latencies, 0.99),
        "keep_alive_unkeyed_p50_ms": 1000 * _percentile(unkeyed, 0.50),
    }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _user_suite(url: str, tests: int, start_seconds: float) -> dict:
    """`tests` single-ticket tests through one client, as a suite shares the plugin's tickets_client."""
    from tickets_client.client import TicketsClient

    client = TicketsClient(url)
    began = time.perf_counter()
    for test in range(tests):
        key = f"bench-suite-test-{test}"  # a key per test: its first ticket is known
        if client.next(key) != [1]:
            raise AssertionError(f"{key}: the first ticket of a new key is not 1")
    elapsed = time.perf_counter() - began
    return {
        "user_suite_start_s": start_seconds,
        "user_suite_tests": tests,
        "user_suite_s": elapsed,
        "user_suite_tests_per_s": tests / elapsed,
    }


def _load(url: str, seconds: float) -> dict:
    parts = urlsplit(url)
    start = threading.Barrier(LOAD_THREADS + 1)
    results: list[tuple[list[int], list[float], list[str]]] = [([], [], []) for _ in range(LOAD_THREADS)]

    def client(tickets: list[int], latencies: list[float], failures: list[str]) -> None:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        start.wait()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            connection.request("GET", "/bench-load", headers={"Accept": "application/json"})
            response = connection.getresponse()
            body = response.read()
            latencies.append(time.perf_counter() - began)
            if response.status == 200:
                tickets.append(json.loads(body)["ticket"])
            else:
                failures.append(f"{response.status} {body[:200]!r}")
        connection.close()

    threads = [threading.Thread(target=client, args=result) for result in results]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    tickets = [ticket for result in results for ticket in result[0]]
    latencies = sorted(latency for result in results for latency in result[1])
    failures = [failure for result in results for failure in result[2]]
    return {
        "local_rps": len(latencies) / elapsed,
        "local_p50_ms": 1000 * latencies[len(latencies) // 2],
        "local_p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "local_requests": len(latencies),
        "local_duplicates": len(tickets) - len(set(tickets)),
        "local_failures": len(failures),
        "local_failure_sample": failures[:3],
        "local_threads": LOAD_THREADS,
    }


def _per_request(url: str, seconds: float) -> dict:
    from tickets_client.client import TicketsClient

    client = TicketsClient(url)
    issued: list[int] = []
    deadline = time.perf_counter() + seconds
    began = time.perf_counter()
    while time.perf_counter() < deadline:
        issued.extend(client.next("bench-per-request"))
    elapsed = time.perf_counter() - began
    _check_increasing(issued, "one request per ticket")
    return {"per_request_tickets_per_s": len(issued) / elapsed}


def _lease(url: str, seconds: float, warm_up_seconds: float) -> dict:
    from tickets_client.client import MAX_BLOCK, TicketsClient
    from tickets_client.lease import TicketLease

    client = TicketsClient(url)
    block_latencies = []
    for _ in range(5):  # what one block of the most tickets a request may take costs here
        began = time.perf_counter()
        client.block("bench-block-latency", MAX_BLOCK, idempotent=False)
        block_latencies.append(time.perf_counter() - began)
    lease = TicketLease(client, "bench-lease", block_size=LEASE_START_BLOCK)
    # The lease sizes its blocks itself: the warm-up is where it grows from LEASE_START_BLOCK.
    warm_up = _drain(lease, warm_up_seconds)
    sustained = _drain(lease, seconds, warm_up.next_ticket)
    settled = lease.current_block_size
    sizes = lease.block_sizes
    unused = lease.close()
    return {
        "lease_tickets_per_s": sustained.per_s,
        "lease_tickets": sustained.taken,
        "lease_seconds": round(sustained.seconds, 2),
        "lease_warm_up_tickets_per_s": warm_up.per_s,
        "lease_warm_up_seconds": round(warm_up.seconds, 2),
        "lease_start_block": LEASE_START_BLOCK,
        "lease_block_size_settled": settled,
        "lease_block_sizes": dict(sorted(sizes.items())),
        "lease_unused_at_close": unused,
        "lease_block_request_ms": 1000 * statistics.median(block_latencies),
        "lease_block_request_count": MAX_BLOCK,
    }


class _InstantBlocks:
    """A block source in memory: what the lease alone can hand out when a block costs nothing."""

    def __init__(self) -> None:
        self._last = 0

    def block(self, key: Any, count: int, *, idempotent: bool = True) -> Any:
        from tickets_client.client import Block

        block = Block(self._last + 1, self._last + count, 1, count)
        self._last += count
        return block


def _lease_handout_ceiling(seconds: float) -> dict:
    from tickets_client.lease import TicketLease

    lease = TicketLease(_InstantBlocks(), "in-memory", block_size=LEASE_START_BLOCK)
    drained = _drain(lease, seconds)
    lease.close()
    return {"lease_handout_ceiling_per_s": drained.per_s}


@dataclass(frozen=True)
class _Drained:
    taken: int
    seconds: float
    next_ticket: int

    @property
    def per_s(self) -> float:
        return self.taken / self.seconds


def _drain(lease: Any, seconds: float, expected_first: int | None = None) -> _Drained:
    """Take tickets from `lease` for `seconds`, in chunks between looks at the clock. One lease on
    a fresh single-lane key is its only consumer, so its tickets must be consecutive: each chunk is
    compared with the range it must equal (at C speed, to keep the check out of the figure)."""
    taken = 0
    take = lease.next
    began = time.perf_counter()
    deadline = began + seconds
    while time.perf_counter() < deadline:
        chunk = [take() for _ in range(_CHUNK)]
        first = chunk[0] if expected_first is None else expected_first
        if chunk != list(range(first, first + _CHUNK)):
            raise AssertionError("the lease skipped, repeated or reordered tickets")
        expected_first = first + _CHUNK
        taken += _CHUNK
    elapsed = time.perf_counter() - began
    return _Drained(taken, elapsed, expected_first if expected_first is not None else 1)


def _check_increasing(issued: list[int], what: str) -> None:
    if any(b <= a for a, b in zip(issued, issued[1:])):
        raise AssertionError(f"{what}: tickets did not increase")
