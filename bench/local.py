"""The local server (tickets_local) over real HTTP on 127.0.0.1, and the client's block lease.

- load: 16 threads, each on its own keep-alive connection, ask one key for single tickets
  for a fixed time; every ticket is collected, so duplicates are counted, not assumed.
- per request: one thread, one `TicketsClient.next()` (one HTTP request) per ticket.
- lease: one thread takes tickets from `TicketLease` (blocks of 1000, refilled in the
  background at half a block) for a fixed time, every ticket checked (consecutive: the
  lease is the key's only consumer).
  Two parts explain the figure: the latency of one block request, and the rate at which
  the lease hands out tickets when blocks cost nothing (a block source in memory).
Runs in a child process (bench.child).
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from .environment import CDK_JSON

LOAD_THREADS = 16
LEASE_BLOCK = 1000
_CHUNK = 1000  # tickets taken between two looks at the clock


def measure(load_seconds: float = 4.0, per_request_seconds: float = 2.0, lease_seconds: float = 3.0) -> dict:
    from tickets_local.server import LocalServer

    with LocalServer(config_path=CDK_JSON, port=0) as server:
        figures = _load(server.url, load_seconds)
        figures.update(_per_request(server.url, per_request_seconds))
        figures.update(_lease(server.url, lease_seconds))
    figures.update(_lease_handout_ceiling(lease_seconds / 2))
    return figures


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


def _lease(url: str, seconds: float) -> dict:
    from tickets_client.client import TicketsClient
    from tickets_client.lease import TicketLease

    client = TicketsClient(url)
    block_latencies = []
    for _ in range(5):  # what one block costs, on the lease's own request path
        began = time.perf_counter()
        client.next("bench-block-latency", LEASE_BLOCK)
        block_latencies.append(time.perf_counter() - began)
    tickets_per_s, handed = _drain(TicketLease(client, "bench-lease", block_size=LEASE_BLOCK, refill_at=0.5),
                                   seconds)
    return {"lease_tickets_per_s": tickets_per_s, "lease_tickets": handed,
            "lease_block_request_ms": 1000 * statistics.median(block_latencies)}


class _InstantBlocks:
    """A block source in memory: what the lease alone can hand out when a block costs nothing."""

    def __init__(self) -> None:
        self._last = 0

    def next(self, key: Any, count: int, *, idempotent: bool = True) -> list[int]:
        block = list(range(self._last + 1, self._last + count + 1))
        self._last += count
        return block


def _lease_handout_ceiling(seconds: float) -> dict:
    from tickets_client.lease import TicketLease

    tickets_per_s, _ = _drain(TicketLease(_InstantBlocks(), "in-memory", block_size=LEASE_BLOCK, refill_at=0.5),
                              seconds)
    return {"lease_handout_ceiling_per_s": tickets_per_s}


def _drain(lease: Any, seconds: float) -> tuple[float, int]:
    """Take tickets from `lease` for `seconds`, in chunks between looks at the clock. One lease on
    a fresh single-lane key is its only consumer, so its tickets must be consecutive: each chunk is
    compared with the range it must equal (at C speed, to keep the check out of the figure)."""
    taken = 0
    expected_first = None
    with lease:
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
    return taken / elapsed, taken


def _check_increasing(issued: list[int], what: str) -> None:
    if any(b <= a for a, b in zip(issued, issued[1:])):
        raise AssertionError(f"{what}: tickets did not increase")
