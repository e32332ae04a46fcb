"""Concurrency soak: 32 clients, a fixed number of requests each, on plain, sharded and block-leasing
keys, through the local server (which serialises moto, the way DynamoDB serialises writes to an item).
The work is counted, not timed, so a slow machine runs the same test, only longer."""

from __future__ import annotations

import threading
from collections import defaultdict
from http.client import HTTPConnection
from urllib.parse import urlsplit

import pytest

from local_support import call

CLIENTS = 32
REQUESTS_PER_CLIENT = 20
WORKLOAD = (  # (key, count): every client cycles through these
    ("orders", 1),
    ("hot", 1),
    ("hot", 7),
    ("bulk", 25),
    ("orders", 3),
)
CONFIG = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {"orders": {"start": 5000}, "hot": {"shards": 4}, "bulk": {"start": 1, "stride": 10}},
}


@pytest.fixture(scope="module")
def server(tickets_servers):
    running = tickets_servers(CONFIG, region="eu-west-1")
    running.reset()  # the module's own counters, whatever ran on this server before
    return running


def client(url: str, offset: int, results: list, failures: list) -> None:
    parts = urlsplit(url)
    connection = HTTPConnection(parts.hostname, parts.port, timeout=60)  # kept alive across requests
    issued = []  # (key, tickets) in this client's order
    for step in range(offset, offset + REQUESTS_PER_CLIENT):
        key, count = WORKLOAD[step % len(WORKLOAD)]
        reply = call(url, f"/{key}?count={count}", "POST", connection=connection)
        if reply.status != 200:
            failures.append((reply.status, reply.body))
            continue
        answer = reply.json()
        issued.append((key, answer.get("tickets", [answer["ticket"]])))
    connection.close()
    results.append(issued)


def test_32_clients_never_get_a_duplicate_or_a_5xx_and_every_lane_increases(server):
    results: list[list] = []
    failures: list = []
    threads = [threading.Thread(target=client, args=(server.url, n, results, failures)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(results) == CLIENTS, "a client thread died"
    assert failures == []

    by_key: dict[str, list[int]] = defaultdict(list)
    requests = 0
    for issued in results:
        last_per_lane: dict[tuple[str, int], int] = {}
        for key, tickets in issued:
            requests += 1
            assert tickets == sorted(tickets) and len(set(tickets)) == len(tickets)
            by_key[key] += tickets
            lane = lane_of(key, tickets[0])
            assert all(lane_of(key, ticket) == lane for ticket in tickets)
            # One client's requests are sequential: a later block on the same lane is higher.
            assert tickets[0] > last_per_lane.get((key, lane), -1)
            last_per_lane[(key, lane)] = tickets[-1]

    total = sum(len(tickets) for tickets in by_key.values())
    duplicates = total - sum(len(set(tickets)) for tickets in by_key.values())
    print(f"\nsoak: {CLIENTS} clients, {requests} requests, {total} tickets, duplicates: {duplicates}")
    assert requests == CLIENTS * REQUESTS_PER_CLIENT
    assert duplicates == 0
    # eu-west-1 is slot 1: it owns lane 1 of orders and bulk, lanes 4..7 of hot.
    assert {lane_of("orders", t) for t in by_key["orders"]} == {1}
    assert {lane_of("bulk", t) for t in by_key["bulk"]} == {1}
    assert {lane_of("hot", t) for t in by_key["hot"]} <= {4, 5, 6, 7}
    # The stored high-water mark of every lane is the highest ticket handed out on it.
    for key in ("orders", "hot", "bulk"):
        state = call(server.url, f"/_counters/{key}").json()
        for lane in state["lanes"]:
            issued_on_lane = [t for t in by_key[key] if lane_of(key, t) == lane["lane"]]
            assert lane["last"] == max(issued_on_lane, default=None)  # a lane no request picked: never used


def lane_of(key: str, ticket: int) -> int:
    counter = CONFIG["counters"][key]
    lanes = CONFIG["regionSlots"] * counter.get("shards", 1)
    return (ticket - counter.get("start", 1)) // counter.get("stride", 1) % lanes
