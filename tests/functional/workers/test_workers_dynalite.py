"""Worker-id leases on dynalite (atomic, unlike moto), through the local server over real HTTP: concurrent
acquires never share an id, a full pool answers 503 pool_full with Retry-After, and the load test: 64 clients
acquire, renew and release for TICKETS_WORKERS_LOAD_SECONDS (default a few seconds; the closing run a minute),
the server killed (-9) mid-run and started again on the same tables, and no two grants' [start, safe end] of one
id overlap (docs/explanation/worker-leases.md#what-a-holder-must-do)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from local_support import call, dynalite_answers, running_dynalite
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow

TTL_SECONDS = 10
MARGIN = max(1.0, TTL_SECONDS / 10)  # the clients' default margin
# The tables of a config of the test's own, layouts never changed: no ledger (docs/reference/local-server.md).
WITHOUT_LEDGER = ["--without-ledger"]
CONFIG = {
    "regions": {"us-east-1": 0},
    "tableName": "workers-test",
    "workers": {"small": {"size": 8, "ttlSeconds": 60}, "load": {"size": 48, "ttlSeconds": TTL_SECONDS}},
}
LOAD_SECONDS = float(os.environ.get("TICKETS_WORKERS_LOAD_SECONDS", "4"))
CLIENTS = 64


def _post(url: str, path: str, body: dict | None = None, **headers: str) -> tuple[int, dict, dict]:
    reply = call(url, path, "POST", headers=headers, body=None if body is None else json.dumps(body).encode())
    return reply.status, reply.json(), reply.headers


def test_concurrent_acquires_never_share_an_id_and_a_full_pool_is_503_with_retry_after(dynalite_on_disk):
    with LocalTickets(CONFIG, endpoint_url=dynalite_on_disk, arguments=WITHOUT_LEDGER) as server:
        began = time.monotonic()
        with ThreadPoolExecutor(24) as pool:
            answers = list(
                pool.map(lambda index: _post(server.url, "/_workers/small", {"owner": f"c{index}"}), range(24))
            )
        took = time.monotonic() - began  # a refusal's earliest lease was granted at most this long before it
        granted = [body["worker"] for status, body, _ in answers if status == 200]
        assert sorted(granted) == list(range(8))  # every id once, no id twice
        refused = [
            (status, body["error"], int(headers["retry-after"])) for status, body, headers in answers if status != 200
        ]
        assert len(refused) == 16 and {(status, error) for status, error, _ in refused} == {(503, "pool_full")}
        assert all(60 - math.ceil(took) <= seconds <= 60 for _, _, seconds in refused), (took, refused)
        listed = call(server.url, "/_workers/small").json()
        assert [lease["worker"] for lease in listed["leases"]] == list(range(8))


@dataclass
class Grant:
    worker: int
    epoch: int
    start: float  # when the holder had its answer (monotonic)
    end: float  # its last safe end, or when it released, whichever came first


class Servers:
    """Where the clients send: the server's URL, replaced after the kill (clients read it at each request)."""

    url = ""


def _holder(
    servers: Servers, stop: float, grants: list[Grant], counts: Counter, lock: threading.Lock, seed: int
) -> None:
    """Acquire, hold for a while renewing at a third of the ttl, then release or walk away; any failure of a
    renewal (the server gone) leaves the id used only until the safe end."""
    rng = random.Random(seed)
    while time.monotonic() < stop:
        sent = time.monotonic()
        try:
            status, body, headers = _post(servers.url, "/_workers/load", {"owner": "load"})
        except OSError:
            counts["no answer"] += 1
            time.sleep(0.2)
            continue
        counts[f"acquire {status}"] += 1
        if status != 200:
            time.sleep(rng.uniform(0.05, 0.3))
            continue
        grant = Grant(body["worker"], body["epoch"], time.monotonic(), sent + TTL_SECONDS - MARGIN)
        hold_until = time.monotonic() + rng.uniform(0, 2 * TTL_SECONDS / 3)
        path, held = f"/_workers/load/{grant.worker}", json.dumps({"epoch": grant.epoch}).encode()
        while time.monotonic() < min(hold_until, grant.end) and time.monotonic() < stop:
            time.sleep(min(TTL_SECONDS / 3 / 4, max(0.0, grant.end - time.monotonic())))
            renew_sent = time.monotonic()
            try:
                reply = call(servers.url, path, "PUT", body=held)
            except OSError:
                counts["no answer"] += 1
                continue
            counts[f"renew {reply.status}"] += 1
            if reply.status == 200:
                grant.end = max(grant.end, renew_sent + TTL_SECONDS - MARGIN)
            elif reply.status == 409:
                grant.end = min(grant.end, time.monotonic())  # lost: stop now
                break
        if rng.random() < 0.7:  # release (stop using it first), or walk away and let it expire
            grant.end = min(grant.end, time.monotonic())
            with contextlib.suppress(OSError):
                counts[f"release {call(servers.url, path, 'DELETE', body=held).status}"] += 1
        with lock:
            grants.append(grant)


def overlaps(grants: list[Grant]) -> list[tuple[Grant, Grant]]:
    """Pairs of grants of one id whose [start, end] overlap, and grants of one id whose epochs do not grow."""
    found = []
    by_worker: dict[int, list[Grant]] = {}
    for grant in grants:
        by_worker.setdefault(grant.worker, []).append(grant)
    for held in by_worker.values():
        held.sort(key=lambda grant: grant.start)
        found += [(a, b) for a, b in zip(held, held[1:]) if b.start < a.end or b.epoch <= a.epoch]
    return found


def test_64_clients_never_overlap_across_a_kill_9_of_the_server(dynalite_on_disk, tables_directory, capsys):
    first = LocalTickets(CONFIG, endpoint_url=dynalite_on_disk, arguments=WITHOUT_LEDGER).start()
    servers = Servers()
    servers.url = first.url
    grants: list[Grant] = []
    counts: Counter = Counter()
    lock = threading.Lock()
    began = time.monotonic()
    stop = began + LOAD_SECONDS
    holding = (servers, stop, grants, counts, lock)
    threads = [threading.Thread(target=_holder, args=(*holding, seed)) for seed in range(CLIENTS)]
    for thread in threads:
        thread.start()
    with contextlib.ExitStack() as restarted:
        time.sleep(LOAD_SECONDS / 2)
        os.kill(first._process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        first.stop()
        killed_at = time.monotonic() - began
        alive = dynalite_answers(dynalite_on_disk)
        endpoint = dynalite_on_disk if alive else restarted.enter_context(running_dynalite(tables_directory))
        second = restarted.enter_context(LocalTickets(CONFIG, endpoint_url=endpoint, arguments=WITHOUT_LEDGER))
        servers.url = second.url
        restarted_at = time.monotonic() - began
        for thread in threads:
            thread.join(timeout=LOAD_SECONDS + 4 * TTL_SECONDS)
        assert not any(thread.is_alive() for thread in threads)
    found = overlaps(grants)
    with capsys.disabled():
        print(
            f"\nworker leases: {CLIENTS} clients for {LOAD_SECONDS:.0f} s, server killed (-9) at {killed_at:.1f} s and "
            f"serving again at {restarted_at:.1f} s; {len(grants)} grants of {len({g.worker for g in grants})} ids; "
            f"{dict(sorted(counts.items()))}; overlapping live leases: {len(found)}"
        )
    # How many renewals and full-pool refusals a run sees depends on the machine's speed (printed above); every grant
    # is recorded, and none overlaps another of its id, whatever the speed.
    assert counts["acquire 200"] == len(grants) > 0
    assert not found, found[:5]


def test_the_overlap_check_sees_an_overlap_and_an_epoch_that_does_not_grow():
    apart = [Grant(3, 1, 0.0, 5.0), Grant(3, 2, 5.0, 9.0), Grant(4, 1, 1.0, 8.0)]
    assert overlaps(apart) == []
    assert overlaps([*apart, Grant(3, 3, 8.5, 12.0)]) == [(apart[1], Grant(3, 3, 8.5, 12.0))]
    assert overlaps([Grant(5, 2, 0.0, 1.0), Grant(5, 2, 2.0, 3.0)]) == [(Grant(5, 2, 0.0, 1.0), Grant(5, 2, 2.0, 3.0))]
