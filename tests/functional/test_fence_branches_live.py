"""Finding 1 (tests/models/test_team_fence_model.py) with real processes: a dynalite per region, local servers as each
region's deployed function (reading a checkout's cdk.json and ledger), `python -m tickets_admin fence` as a process, and
`python -m tickets_deploy predeploy` against CloudFormation's answers (a stand-in: tests/cloud_assembly.py).

Branch a fences `orders` from 1 to 2 shards and is deployed to us-east-1; branch b, opened from the same main,
moves the service to eu-west-1 (slot 1 of 2, us-east-1 retired). b's fence once read only its own ledger's lanes,
took the lane a's fence had stopped for its own, and recorded the same fence; its deploy checked only eu-west-1:
both regions issued the same orders tickets. Now b's fence refuses, naming a's fence and the merge; the way out
(a's ledger, b's move synthesised and fenced on top) issues above a's lanes. And a deploy from a line that never
took in the other's version is refused by the pre-deploy check, which reads us-east-1 although b retired it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from test_fence import branches, checkout, synthesise

from cloud_assembly import CloudFormationStandIn, write_assembly
from local_support import running_dynalite
from tickets_deploy import predeploy
from tickets_deploy.ledger import LedgerError, read_ledger_file
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow

MAIN = {"regions": {"us-east-1": 0}, "regionSlots": 1, "strictKeys": True, "counters": {"orders": {"start": 5000}}}
SHARDED = {**MAIN, "counters": {"orders": {"start": 5000, "shards": 2}}}
MOVED = {**MAIN, "regions": {"eu-west-1": 1}, "regionSlots": 2}


def fence(directory: Path, endpoints: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    urls = [f"--endpoint-url={region}={url}" for region, url in endpoints.items()]
    return subprocess.run(
        [sys.executable, "-m", "tickets_admin", "fence", "--config", str(directory / "cdk.json"), *urls, *more],
        capture_output=True,
        text=True,
        timeout=120,
    )


def take(server: LocalTickets, count: int) -> tuple[int, list[int]]:
    """A block of `count` orders tickets from the server: its status and the tickets."""
    request = urllib.request.Request(f"{server.url}/_blocks/orders?count={count}", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, []
    return 200, list(range(body["first"], body["last"] + 1, body["step"]))


def test_a_fence_and_a_move_on_two_branches_never_issue_a_ticket_twice(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        east, west = (stack.enter_context(running_dynalite()) for _ in range(2))
        endpoints = {"us-east-1": east, "eu-west-1": west}
        main, a, b = branches(tmp_path, MAIN)

        def serve(directory: Path, region: str) -> LocalTickets:
            server = LocalTickets(region=region, endpoint_url=endpoints[region], config_file=directory / "cdk.json")
            stack.callback(server.stop)
            return server.start()

        issued: dict[int, str] = {}

        def record(where: str, tickets: list[int]) -> None:
            for ticket in tickets:
                assert ticket not in issued, f"orders {ticket} issued twice: by {issued[ticket]} and by {where}"
                issued[ticket] = where

        main_east = serve(main, "us-east-1")
        record("main in us-east-1", take(main_east, 10)[1])  # 5000 ... 5009

        checkout(a, SHARDED)  # branch a: orders on 2 shards, fenced, deployed to us-east-1
        fenced_a = fence(a, endpoints)
        assert fenced_a.returncode == 0 and "orders: fence 5010; epoch 1" in fenced_a.stdout, fenced_a.stderr
        synthesise(a / "cdk.json", SHARDED)
        main_east.stop()
        a_east = serve(a, "us-east-1")
        for _ in range(4):
            record("a in us-east-1", take(a_east, 3)[1])

        checkout(b, MOVED)  # branch b, opened before a merged: the service moves to eu-west-1
        with pytest.raises(LedgerError, match="python -m tickets_admin fence"):
            synthesise(b / "cdk.json", MOVED)
        before = (b / "tickets.lock.json").read_text()
        fenced_b = fence(b, endpoints)
        print(f"$ python -m tickets_admin fence  (branch b)\n{fenced_b.stdout}{fenced_b.stderr}")
        assert fenced_b.returncode == 1 and "stopped the old lanes" not in fenced_b.stdout
        assert "us-east-1: orders was stopped by fence " in fenced_b.stderr and "does not record" in fenced_b.stderr
        assert (b / "tickets.lock.json").read_text() == before

        # The way out the refusal names: b takes a's ledger, keeps its cdk.json, synthesises, and fences on top.
        shutil.copy(a / "tickets.lock.json", b)
        with pytest.raises(LedgerError, match="python -m tickets_admin fence"):
            synthesise(b / "cdk.json", MOVED)
        fenced_b = fence(b, endpoints)
        assert fenced_b.returncode == 0 and "orders: fence" in fenced_b.stdout, fenced_b.stderr
        epoch = read_ledger_file(b / "tickets.lock.json").services["tickets-counters"].epochs[-1]
        assert (epoch.number, epoch.fence) == (2, max(issued) + 1)
        synthesise(b / "cdk.json", MOVED)
        b_west = serve(b, "eu-west-1")
        for _ in range(4):
            record("b in eu-west-1", take(b_west, 3)[1])
            status, tickets = take(a_east, 3)  # a's function, still running: its lanes are stopped now
            assert status == 503 and not tickets
        assert min(ticket for ticket, where in issued.items() if where == "b in eu-west-1") >= epoch.fence


def test_a_deploy_from_a_line_that_retired_a_region_running_the_other_line_is_refused(tmp_path: Path, capsys) -> None:
    """The pre-deploy check reads us-east-1, which b's ledger retired, though b's assembly holds eu-west-1 alone:
    us-east-1 runs a's version (a's change needed no fence, so b's fence went ahead), which b's history lacks."""
    with contextlib.ExitStack() as stack:
        east, west = (stack.enter_context(running_dynalite()) for _ in range(2))
        endpoints = {"us-east-1": east, "eu-west-1": west}
        _, a, b = branches(tmp_path, MAIN)
        with_max = {**MAIN, "counters": {"orders": {"start": 5000, "max": 10**9}}}
        checkout(a, with_max)
        synthesise(a / "cdk.json", with_max)  # a new version, deployed to us-east-1
        a_east = LocalTickets(region="us-east-1", endpoint_url=east, config_file=a / "cdk.json")
        stack.callback(a_east.stop)
        assert take(a_east.start(), 3) == (200, [5000, 5001, 5002])
        running = {"us-east-1": read_ledger_file(a / "tickets.lock.json").version}

        checkout(b, MOVED)
        fenced_b = fence(b, endpoints)
        assert fenced_b.returncode == 0, fenced_b.stderr
        synthesise(b / "cdk.json", MOVED)
        deploying = read_ledger_file(b / "tickets.lock.json").version
        assembly = write_assembly(tmp_path / "cdk.out", deploying, regions=("eu-west-1",))
        cloud = CloudFormationStandIn(running.get)
        argv = ["--assembly", str(assembly), "--ledger", str(b / "tickets.lock.json")]
        status = predeploy.main(argv, client=cloud.client)
        said = capsys.readouterr()
        print(f"$ python -m tickets_deploy predeploy --assembly cdk.out  (branch b)\n{said.out}{said.err}")
        assert status == 1 and "predeploy: nothing was deployed:" in said.err
        assert (
            f"us-east-1 (slot 0, retired, of tickets-counters): stack Tickets-us-east-1 (not in this deploy) runs "
            f"ledger version {running['us-east-1']}, which is not an ancestor of {deploying}" in said.err
        )
