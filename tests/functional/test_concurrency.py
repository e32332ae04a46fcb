"""Real concurrency: four local servers (processes of their own) on two dynalite instances, one per
region, as two regions' functions share their region's table; client threads on every server at once.

Every other concurrency test goes through one process, which runs one invocation at a time
(tickets_local/server.py); here requests really interleave inside DynamoDB: two servers per table,
each serving several threads. dynalite is atomic per item, as DynamoDB is (moto is not: see
docs/explanation/design.md#the-local-server). The threads take single tickets, lists, range blocks and leases, retry
one Idempotency-Key on both servers of a region at once, and race to create sharded keys no request
has touched yet. Every ticket is collected; the test asserts none repeats and each lies on a lane of
the region that issued it (lambda_src/tickets/sequence.py). The work is counted, not timed.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from local_support import running_dynalite
from tickets.sequence import lanes_of
from tickets_client.client import TicketsClient
from tickets_client.lease import TicketLease
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow

REGIONS = ("us-east-1", "eu-west-1")
SERVERS_PER_REGION = 2
THREADS_PER_SERVER = 4
ROUNDS = 20  # per thread
FRESH_KEYS = [f"fresh-{n}" for n in range(6)]  # sharded, untouched until every thread asks at once
CONFIG = {
    "regions": {region: slot for slot, region in enumerate(REGIONS)},
    "regionSlots": len(REGIONS),
    "counters": {
        "plain": {"start": 1000},
        "listed": {"start": 1, "stride": 10, "shards": 2},
        "blocks": {"shards": 3},
        "leased": {"start": 7},
        "retried": {"shards": 2},
        **{key: {"shards": 4} for key in FRESH_KEYS},
    },
}
IN_PROGRESS_WAIT_SECONDS = 0.02


@dataclass
class Issued:
    """What one thread saw: every ticket by (region, key), and anything that went wrong."""

    tickets: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    failures: list[str] = field(default_factory=list)
    retried_answers: list[tuple[str, list[int], list[int]]] = field(default_factory=list)


@pytest.fixture(scope="module")
def regions():
    """Region -> its servers: two per region, each a process of its own, on that region's dynalite."""
    with contextlib.ExitStack() as stack:
        endpoints = {region: stack.enter_context(running_dynalite()) for region in REGIONS}
        servers = {
            region: [
                LocalTickets(CONFIG, region=region, endpoint_url=endpoints[region], arguments=["--without-ledger"])
                for _ in range(SERVERS_PER_REGION)
            ]
            for region in REGIONS
        }
        everyone = [server for region_servers in servers.values() for server in region_servers]
        for server in everyone:
            stack.callback(server.stop)
        with ThreadPoolExecutor(len(everyone)) as starting:  # they race to create their region's tables too
            list(starting.map(LocalTickets.start, everyone))
        yield servers


def post(url: str, path: str, idempotency_key: str) -> tuple[int, dict]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("POST", path, headers={"Idempotency-Key": idempotency_key, "Accept": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def retried(url: str, path: str, idempotency_key: str) -> tuple[int, dict]:
    """The same request until it is no longer in progress elsewhere (409 in_progress: the other server
    holds the key's lock), as a client's retry does."""
    while True:
        status, answer = post(url, path, idempotency_key)
        if not (status == 409 and answer.get("error") == "in_progress"):
            return status, answer
        time.sleep(IN_PROGRESS_WAIT_SECONDS)


def worker(region: str, servers: list[LocalTickets], index: int, start: threading.Barrier, issued: Issued) -> None:
    own = servers[index % len(servers)]
    other = servers[(index + 1) % len(servers)]
    client = TicketsClient(own.url, timeout=30)
    take = issued.tickets

    def record(key: str, tickets: list[int] | range) -> None:
        take[(region, key)].extend(tickets)

    try:
        start.wait()
        for key in FRESH_KEYS:  # every thread of both regions asks for these keys' first tickets at once
            record(key, client.next(key, count=2))
        with TicketLease(client, "leased", block_size=5, max_block=40) as lease:
            for round_ in range(ROUNDS):
                record("plain", client.next("plain"))
                record("listed", client.next("listed", count=5))
                record("blocks", client.block("blocks", 25).tickets)
                record("leased", [lease.next() for _ in range(15)])
                # One Idempotency-Key sent to both of the region's servers at once: one issues, the other
                # waits for it and replays the same answer.
                key = f"{region}-{index}-{round_}"
                with ThreadPoolExecutor(2) as both:
                    here, there = both.map(retried, (own.url, other.url), ["/retried?count=3"] * 2, [key] * 2)
                if here[0] != 200 or there[0] != 200:
                    issued.failures.append(f"retried {key}: {here} / {there}")
                    continue
                issued.retried_answers.append((key, here[1]["tickets"], there[1]["tickets"]))
                record("retried", here[1]["tickets"])
    except Exception as err:  # a failure in a thread must reach the assertions, not vanish with the thread
        issued.failures.append(f"{region} thread {index}: {type(err).__name__}: {err}")


def test_four_servers_on_two_dynalites_never_repeat_a_ticket_and_keep_every_ticket_on_its_lane(regions):
    threads_total = len(REGIONS) * SERVERS_PER_REGION * THREADS_PER_SERVER
    start = threading.Barrier(threads_total)
    results = [Issued() for _ in range(threads_total)]
    jobs = [
        (region, servers, index)
        for region, servers in regions.items()
        for index in range(SERVERS_PER_REGION * THREADS_PER_SERVER)
    ]
    threads = [
        threading.Thread(target=worker, args=(region, servers, index, start, issued))
        for (region, servers, index), issued in zip(jobs, results)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    failures = [failure for issued in results for failure in issued.failures]
    assert failures == []
    by_region_and_key: dict[tuple[str, str], list[int]] = defaultdict(list)
    for issued in results:
        for region_and_key, tickets in issued.tickets.items():
            by_region_and_key[region_and_key].extend(tickets)
    config = parse_config(CONFIG)
    repeats, off_lane = {}, {}
    for key in CONFIG["counters"]:
        every_region = list(itertools.chain.from_iterable(by_region_and_key[(region, key)] for region in REGIONS))
        repeats[key] = len(every_region) - len(set(every_region))
        for region in REGIONS:
            settings = region_settings(config, region)
            counter = settings.counter(key)
            assert counter is not None
            lanes = lanes_of(key, counter, settings.region_slot, settings.region_slots)
            off_lane[(region, key)] = [
                t for t in by_region_and_key[(region, key)] if not any(lane.owns(t) and t <= lane.max for lane in lanes)
            ]
    assert repeats == {key: 0 for key in CONFIG["counters"]}
    assert off_lane == {(region, key): [] for region in REGIONS for key in CONFIG["counters"]}
    # A retry of one Idempotency-Key got the first answer, whichever server it reached.
    answers = [answer for issued in results for answer in issued.retried_answers]
    mismatched = [key for key, here, there in answers if here != there]
    assert mismatched == []
    # The work was done, all of it (a thread that stopped early would also have reported a failure).
    assert len(answers) == threads_total * ROUNDS
    threads_per_region = SERVERS_PER_REGION * THREADS_PER_SERVER
    expected_counts = {"plain": ROUNDS, "listed": ROUNDS * 5, "blocks": ROUNDS * 25, "leased": ROUNDS * 15}
    expected_counts.update({key: 2 for key in FRESH_KEYS})
    counts = {(region, key): len(by_region_and_key[(region, key)]) for region in REGIONS for key in expected_counts}
    assert counts == {
        (region, key): threads_per_region * per_thread
        for region in REGIONS
        for key, per_thread in expected_counts.items()
    }
