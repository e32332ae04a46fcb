"""The Python client's worker-id leases against the local server over real HTTP: the four methods, a full pool's 503 as
PoolFull with its Retry-After, a restart with its own idempotency key after a release, and Snowflake ids unique across
16 processes sharing a pool of 16 while some are paused (SIGSTOP) past the ttl, so their leases expire and are granted
again during the run. The same on a manual clock: tests/unit/test_client_workers.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict

import pytest

from tickets_client import LeaseLost, PoolFull, TicketsClient, WorkerLease

TTL = 10  # the smallest ttl a pool may have (docs/reference/configuration.md)
WORKERS_CONFIG = {
    "regions": {"us-east-1": 0},
    "regionSlots": 1,
    "strictKeys": False,
    "workers": {"shared": {"size": 16, "ttlSeconds": TTL}, "single": {"size": 1, "ttlSeconds": TTL}},
}
HOLDERS, RUN_SECONDS, PAUSED, PAUSE_SECONDS = 16, 32, 4, TTL + 3

# One holder: leases a worker id, takes Snowflake ids in bursts, closes and leases again every few seconds (so ids
# change hands), and after a loss (it was paused) leases again; says "leased" once it first holds one, and at the
# end writes what it took and held. A holder the test will pause keeps its first lease until the test's go-file
# exists: paused while it holds one, whatever the machine's speed (between two leases it would lose nothing).
HOLDER = """
import json, os, random, sys, time
from tickets_client import LeaseLost, PoolFull, Snowflake, TicketsClient, WorkerLease
url, out, index, seconds, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
client, end, leases = TicketsClient(url, timeout=10), time.monotonic() + seconds, []
while time.monotonic() < end:
    try:
        lease = WorkerLease(client, "shared", owner=f"holder-{index}")
    except PoolFull as full:
        time.sleep(full.retry_after or 1)
        continue
    held = {"worker": lease.grant.worker, "epoch": lease.grant.epoch, "ids": []}
    leases.append(held)
    if len(leases) == 1:
        print("leased", flush=True)
    ids, until = Snowflake(lease), time.monotonic() + random.uniform(1, 4)
    hold = go != "-" and len(leases) == 1  # to be paused: hold the first lease until the pause is over
    try:
        while time.monotonic() < end and (time.monotonic() < until or (hold and not os.path.exists(go))):
            held["ids"] += [ids.next() for _ in range(20)]
            time.sleep(0.02)
    except LeaseLost:
        pass
    held["lost"] = lease.lost  # a holder resumed past its burst's end takes no id, so it asks
    lease.close()
with open(out, "w") as file:
    json.dump(leases, file)
"""


@pytest.fixture(scope="module")
def server(tickets_servers):
    return tickets_servers(WORKERS_CONFIG)


def test_the_four_methods_over_http(server):
    client = TicketsClient(server.url)
    key = f"restart-safe-{time.time_ns()}"
    grant = client.acquire_worker("shared", "api-7", idempotency_key=key)
    assert client.acquire_worker("shared", "api-7", idempotency_key=key) == grant  # a retry: the same grant
    assert grant.pool == "shared" and 0 <= grant.worker < 16 and grant.epoch >= 1 and grant.ttl_seconds == TTL
    renewed = client.renew_worker("shared", grant.worker, grant.epoch)
    assert (renewed.worker, renewed.epoch) == (grant.worker, grant.epoch) and renewed.expires_at >= grant.expires_at
    listed = client.list_workers("shared")
    assert (
        listed["size"] == 16
        and {"worker": grant.worker, "epoch": grant.epoch, "owner": "api-7"}.items()
        <= next(lease for lease in listed["leases"] if lease["worker"] == grant.worker).items()
    )
    with pytest.raises(LeaseLost):
        client.renew_worker("shared", grant.worker, grant.epoch + 1)
    assert client.release_worker("shared", grant.worker, grant.epoch) is True
    assert client.release_worker("shared", grant.worker, grant.epoch) is False  # idempotent: nothing changed
    with pytest.raises(LeaseLost):
        client.renew_worker("shared", grant.worker, grant.epoch)


def test_a_full_pool_raises_pool_full_with_its_retry_after_and_is_not_retried(server):
    waits: list[float] = []
    client = TicketsClient(server.url, sleep=waits.append)
    with WorkerLease(client, "single", owner="first") as lease:
        with pytest.raises(PoolFull) as full:
            client.acquire_worker("single", "second")
        assert full.value.status == 503 and full.value.code == "pool_full"
        assert full.value.retry_after is not None and 1 <= full.value.retry_after <= TTL
        assert f"retry after {full.value.retry_after:g} s" in str(full.value)
        assert waits == []  # raised at once: a lease's expiry, not a blip, frees an id
        assert lease.worker == 0
    with pytest.raises(PoolFull) as gap:  # closing released it; it is granted again after the hand-over gap
        client.acquire_worker("single")
    time.sleep(gap.value.retry_after)
    assert client.acquire_worker("single").worker == 0


def test_a_restart_with_its_own_idempotency_key_after_a_release_leases_afresh(server):
    """The key's record replays the released grant, whose renewal is refused: the lease acquires under a new key."""
    client, key = TicketsClient(server.url), f"restart-{time.time_ns()}"
    with WorkerLease(client, "shared", idempotency_key=key, background=False) as first:
        released = first.grant
    replayed = client.acquire_worker("shared", idempotency_key=key)
    assert (replayed.worker, replayed.epoch) == (released.worker, released.epoch)  # the key's record lives on
    with WorkerLease(client, "shared", idempotency_key=key, background=False) as again:
        assert (again.worker, again.epoch) != (released.worker, released.epoch) and not again.lost


@pytest.mark.slow
def test_snowflake_ids_are_unique_across_16_processes_whose_leases_expire_and_are_granted_again(server, tmp_path):
    outputs = [tmp_path / f"holder-{index}.json" for index in range(HOLDERS)]
    go = tmp_path / "go"
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", HOLDER, server.url, str(out), str(index), str(RUN_SECONDS)]
            + [str(go) if index < PAUSED else "-"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for index, out in enumerate(outputs)
    ]
    try:
        for holder in holders:
            assert holder.stdout is not None and holder.stdout.readline() == "leased\n"
        for holder in holders[:PAUSED]:  # frozen past the ttl: their leases expire, free for the others to take
            os.kill(holder.pid, signal.SIGSTOP)
        time.sleep(PAUSE_SECONDS)
        for holder in holders[:PAUSED]:
            os.kill(holder.pid, signal.SIGCONT)
        go.touch()
        assert [holder.wait(timeout=RUN_SECONDS + 60) for holder in holders] == [0] * HOLDERS
    finally:
        for holder in holders:
            if holder.poll() is None:
                os.kill(holder.pid, signal.SIGCONT)
                holder.kill()
    leases = [dict(lease, holder=index) for index, out in enumerate(outputs) for lease in json.loads(out.read_text())]
    ids = [i for lease in leases for i in lease["ids"]]
    assert len(ids) > 10_000 and len(set(ids)) == len(ids), "an id was issued twice"
    by_worker: dict[int, list[dict]] = defaultdict(list)
    for lease in leases:
        assert all((i >> 12) & 1023 == lease["worker"] for i in lease["ids"])
        by_worker[lease["worker"]].append(lease)
    for worker, held in by_worker.items():
        held.sort(key=lambda lease: lease["epoch"])
        assert len({lease["epoch"] for lease in held}) == len(held), f"worker {worker}: an epoch granted twice"
        used = [(min(lease["ids"]) >> 22, max(lease["ids"]) >> 22) for lease in held if lease["ids"]]
        assert all(before[1] < after[0] for before, after in zip(used, used[1:])), f"worker {worker}: overlap"
    lost = [lease for lease in leases if lease["lost"]]
    paused = [
        (lease["holder"], lease["worker"], lease["epoch"], lease["lost"]) for lease in leases if lease["holder"] < 4
    ]
    assert {lease["holder"] for lease in lost} >= set(range(PAUSED)), f"every paused holder loses a lease: {paused}"
    regranted = [
        lease
        for lease in lost
        if any(
            other["epoch"] > lease["epoch"] and other["holder"] != lease["holder"]
            for other in by_worker[lease["worker"]]
        )
    ]
    assert regranted, "no lease of a paused holder was granted to another holder"
    print(f"{len(ids)} ids, {len(leases)} leases, {len(lost)} lost, {len(regranted)} granted to another holder after")
