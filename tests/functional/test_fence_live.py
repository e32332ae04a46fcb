"""A layout change on a live deployment, with real processes (docs/explanation/epochs-and-fences.md).

Two dynalites, one per region. A local server of the old layout (regionSlots 1, us-east-1 only, `hot`
with one shard, strictKeys false) issues under load from several threads: single tickets, lists and
range blocks of `orders` and `hot`, and a key nobody configured. While it does, cdk.json is edited
(eu-west-1 on slot 1 of 2, `hot` on 4 shards, strictKeys true), the ledger refuses it naming the fence
command, `.venv/bin/python -m tickets_admin fence` runs as a process against both endpoints, the ledger accepts
the config, and servers of the new layout start in both regions and take load too, while the old server
keeps running (a region not yet deployed). Every ticket is collected: none repeats, each lies on its
layout's lane of the issuing region's slot, the new ones at or above the fence; the old server answers
503 (never a 4xx) for fenced keys and keeps serving the unconfigured key in its old layout.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from test_fence import checkout, fence_process, synthesise

from local_support import running_dynalite
from tickets.epochs import Layout
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LedgerError, init_ledger_file, read_ledger_file
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow

OLD = {
    "regions": {"us-east-1": 0},
    "regionSlots": 1,
    "strictKeys": False,
    "counters": {"orders": {"start": 5000}, "hot": {"start": 1}},
}
NEW = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "strictKeys": True,
    "counters": {"orders": {"start": 5000}, "hot": {"start": 1, "shards": 4}},
}
FENCED = ("orders", "hot", "default")
REQUESTS = ("/orders", "/hot?count=5", "/_blocks/hot?count=40", "/_blocks/orders?count=3", "/loose")
THREADS_PER_SERVER = 3


class Load:
    """Threads sending REQUESTS round-robin to one server until stopped; every answer kept."""

    def __init__(self, server: LocalTickets, name: str):
        self.server, self.name = server, name
        self.answers: list[tuple[float, str, int, dict]] = []
        self.failures: list[str] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(THREADS_PER_SERVER)]
        for thread in self.threads:
            thread.start()

    def run(self, offset: int) -> None:
        parts = urlsplit(self.server.url)
        n = offset
        while not self.stopping.is_set():
            path = REQUESTS[n % len(REQUESTS)]
            n += 1
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            try:
                connection.request("POST", path, headers={"Accept": "application/json"})
                response = connection.getresponse()
                self.answers.append((time.monotonic(), path, response.status, json.loads(response.read())))
            except Exception as err:  # must reach the assertions, not vanish with the thread
                self.failures.append(f"{self.name} {path}: {type(err).__name__}: {err}")
                return
            finally:
                connection.close()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)


def tickets_of(body: dict) -> list[int]:
    if "first" in body:
        return list(range(body["first"], body["last"] + 1, body["step"]))
    return body.get("tickets", [body["ticket"]])


def test_adding_a_region_and_shards_under_load_never_repeats_a_ticket(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        east, west = (stack.enter_context(running_dynalite()) for _ in range(2))
        config_file = checkout(tmp_path, OLD)
        init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(OLD)})
        old = LocalTickets(region="us-east-1", endpoint_url=east, config_file=config_file).start()
        stack.callback(old.stop)
        old_load = Load(old, "us-east-1 old")
        stack.callback(old_load.stop)
        while sum(status == 200 for *_, status, _ in old_load.answers) < 60:
            time.sleep(0.05)

        checkout(tmp_path, NEW)  # the edit
        with pytest.raises(LedgerError, match="python -m tickets_admin fence"):
            synthesise(config_file, NEW)
        fenced_at = time.monotonic()
        fence = fence_process(config_file, east, west)
        assert fence.returncode == 0, fence.stderr
        synthesise(config_file, NEW)  # accepted now
        ledger = read_ledger_file(tmp_path / "tickets.lock.json").services["tickets-counters"]
        epochs = {epoch.key: epoch for epoch in ledger.epochs}
        assert sorted(epochs) == sorted(FENCED)
        for key, epoch in epochs.items():
            assert f"{key}: fence {epoch.fence}; epoch 1" in fence.stdout

        new = {
            region: LocalTickets(region=region, endpoint_url=url, config_file=config_file).start()
            for region, url in (("us-east-1", east), ("eu-west-1", west))
        }
        for server in new.values():
            stack.callback(server.stop)
        new_loads = {region: Load(server, f"{region} new") for region, server in new.items()}
        for load in new_loads.values():
            stack.callback(load.stop)
        while min(sum(status == 200 for *_, status, _ in load.answers) for load in new_loads.values()) < 60:
            time.sleep(0.05)
        for load in (old_load, *new_loads.values()):
            load.stop()
        logs = {"old": (old.running, old.log_tail()[-1500:])}

    assert not [failure for load in (old_load, *new_loads.values()) for failure in load.failures], logs
    issued = collected(old_load, new_loads, epochs, fenced_at)
    assert {name for name in issued["hot"].values()} == {"us-east-1 old", "us-east-1 new", "eu-west-1 new"}
    assert any(status == 503 for *_, status, _ in old_load.answers), "the old server never met its stopped lanes"
    assert "loose" in issued and all(name == "us-east-1 old" for name in issued["loose"].values())


OLD_LAYOUTS = {"orders": Layout(5000, 1, 1, 1), "hot": Layout(1, 1, 1, 1), "loose": Layout(1, 1, 1, 1)}
SLOTS = {"us-east-1": 0, "eu-west-1": 1}


def collected(old_load: Load, new_loads: dict[str, Load], epochs: dict, fenced_at: float) -> dict[str, dict[int, str]]:
    """Every ticket answered, by key, with the load that got it; each checked: never twice, on its lane, and
    on the right side of its key's fence. Every refusal checked: the old server's 503 on a fenced key after
    the fence, the new servers' 404 on a key nobody configured."""
    issued: dict[str, dict[int, str]] = defaultdict(dict)
    for load, region in ((old_load, "us-east-1"), *((new_loads[r], r) for r in new_loads)):
        for at, path, status, body in load.answers:
            key = path.strip("/").split("?")[0].removeprefix("_blocks/")
            if status != 200:
                # The old server: its fenced lanes answer 503 (retriable), never a 4xx; the new servers:
                # a key nobody configured is 404 under strictKeys.
                expected = (503, "unavailable") if load is old_load else (404, "not_found")
                assert (status, body["error"]) == expected, (load.name, path, status, body)
                assert load is not old_load or (key in FENCED and at >= fenced_at), (path, body)
                continue
            for ticket in tickets_of(body):
                assert ticket not in issued[key], f"{key} {ticket} issued twice: {issued[key][ticket]} and {load.name}"
                issued[key][ticket] = load.name
                check_lane(key, ticket, region if load is not old_load else None, epochs)
    return issued


def check_lane(key: str, ticket: int, new_region: str | None, epochs: dict) -> None:
    """`ticket` is on its lane: the old layout's slot 0 below the fence (new_region None: the old server), or
    the new layout's lane of `new_region`'s slot at or above it."""
    if new_region is None:
        assert OLD_LAYOUTS[key].owner(ticket) == (0, 0), (key, ticket)
        assert key not in epochs or ticket < epochs[key].fence
        return
    layout = epochs[key].new
    owner = layout.owner(ticket)
    assert owner is not None and owner[0] == SLOTS[new_region], (key, ticket, new_region, layout)
    assert ticket >= epochs[key].fence
