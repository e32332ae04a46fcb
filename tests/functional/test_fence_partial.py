"""Fences that take several runs, fences left unfinished, and fences of two lines of history, through the real
handler on moto (docs/how-to/change-a-layout.md): the fence's findings 1, 2 and 6 (finding 1:
tests/models/test_team_fence_model.py).

A fence is recorded as pending in the ledger before any lane is stopped, each stopped lane carrying its id: runs over
disjoint sets of regions add up and the one that leaves no region unfenced records the epoch; an abandoned fence is
finished by `fence` or undone by `fence --undo` (refused once it was recorded anywhere); meanwhile synthesis refuses
every config. A fence that finds a lane another fence stopped (another branch changed the layout) refuses, and so
does one that finds a region recorded in the ledger but never deployed, naming why and what to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_fence import OLD, branches, checkout, deployed, fence, synthesise, take

from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LedgerError, init_ledger_file, read_ledger_file

TWO = {**OLD, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
SHARDED = {**TWO, "counters": {"orders": {"start": 5000, "shards": 4}}}
UNDO = "python -m tickets_admin fence --undo"


def two_regions(tmp_path: Path):
    """TWO's cdk.json and ledger, both regions deployed, orders issued in each: 5000, 5002, 5004 and 5001 ... 5019."""
    config_file = checkout(tmp_path, TWO)
    init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(TWO)})
    east, west = (deployed(TWO, region, tmp_path) for region in ("us-east-1", "eu-west-1"))
    take(east, "/orders", count=3)
    take(west, "/orders", count=10)
    return config_file, east, west


def service(tmp_path: Path):
    return read_ledger_file(tmp_path / "tickets.lock.json").services["tickets-counters"]


def test_runs_over_disjoint_regions_complete_the_fence_and_record_it(aws, tmp_path: Path) -> None:
    """Finding 2: each run once counted only its own regions, so `--region eu-west-1` after `--region us-east-1`
    recorded nothing either, and the fence could never be finished."""
    config_file, east, west = two_regions(tmp_path)
    checkout(tmp_path, SHARDED)
    status, out, _ = fence(config_file, "--region", "us-east-1")
    assert status == 0 and "not recorded yet: eu-west-1 still to fence" in out and UNDO in out
    assert service(tmp_path).fencing is not None and service(tmp_path).epochs == ()
    with pytest.raises(LedgerError, match=r"fencing: .* has not recorded it.*tickets_admin fence --undo"):
        synthesise(config_file, SHARDED)
    assert take(west, "/orders") == [5021]  # not fenced yet: the old layout goes on there

    status, out, err = fence(config_file, "--region", "eu-west-1")
    assert status == 0, err
    assert "orders: fence 5022; epoch 1" in out and "recorded in" in out  # above eu-west-1's 5021
    assert service(tmp_path).fencing is None
    assert west.post("/orders").status == 503
    synthesise(config_file, SHARDED)
    issued = take(deployed(SHARDED, "us-east-1", tmp_path), "/orders", count=3)
    assert min(issued) >= 5022
    assert fence(config_file)[1].startswith("nothing to fence")


def test_an_abandoned_fence_is_refused_by_synthesis_and_undone_by_one_command(aws, tmp_path: Path) -> None:
    """Finding 2: after a partial fence, cdk.json put back was told "nothing to fence", synthesis accepted it, and the
    stopped key answered 503 in us-east-1 for good."""
    config_file, east, west = two_regions(tmp_path)
    checkout(tmp_path, SHARDED)
    assert fence(config_file, "--region", "us-east-1")[0] == 0
    stopped = east.post("/orders")
    assert stopped.status == 503 and UNDO in stopped.body["message"]

    checkout(tmp_path, TWO)  # the operator gives up and puts cdk.json back
    status, _, err = fence(config_file)
    assert status == 1 and "records fence" in err and "as pending" in err and UNDO in err, err
    with pytest.raises(LedgerError, match="fencing: .*tickets_admin fence --undo"):
        synthesise(config_file, TWO)

    status, out, err = fence(config_file, "--undo")
    assert status == 0, err
    assert "us-east-1: put back orders" in out and "eu-west-1: nothing was stopped" in out
    ledger = read_ledger_file(tmp_path / "tickets.lock.json")
    assert ledger.services["tickets-counters"].fencing is None and ledger.versions[-1].change.startswith("fence undone")
    assert take(east, "/orders") == [5006]  # its lane again, where it stopped
    synthesise(config_file, TWO)  # accepted
    status, _, err = fence(config_file, "--undo")  # nothing pending any more
    assert status == 1 and "records no pending fence: nothing to undo" in err


def test_a_fence_recorded_by_another_checkout_cannot_be_undone_but_is_recorded_here_too(aws, tmp_path: Path) -> None:
    """Two checkouts of the ledger with the fence pending: one finishes it (and its layout is deployed); `--undo` in the
    other would put back lanes the recorded fence is computed from, so it is refused: the lanes are sealed, and lanes of
    the new epoch exist. `fence` there records the same epoch."""
    config_file, east, west = two_regions(tmp_path)
    checkout(tmp_path, SHARDED)
    assert fence(config_file, "--region", "us-east-1")[0] == 0
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(tmp_path / "tickets.lock.json", other)
    other_config = checkout(other, SHARDED)

    status, out, _ = fence(config_file)
    assert status == 0 and "orders: fence 5020; epoch 1" in out
    synthesise(config_file, SHARDED)
    take(deployed(SHARDED, "us-east-1", tmp_path), "/orders")
    before = east.items(), west.items()

    status, _, err = fence(other_config, "--undo")
    assert status == 1 and "cannot be undone; nothing was written" in err
    assert "its lanes are sealed" in err and "us-east-1: orders@1 exists" in err
    assert (east.items(), west.items()) == before
    status, out, _ = fence(other_config)
    assert status == 0 and "orders: fence 5020; epoch 1" in out
    assert read_ledger_file(other / "tickets.lock.json").services["tickets-counters"].epochs == service(tmp_path).epochs


MOVED = {"regions": {"eu-west-1": 1}, "regionSlots": 2, "strictKeys": True, "counters": {"orders": {"start": 5000}}}


def test_a_fence_finding_lanes_another_branch_fenced_is_refused_before_anything_is_written(aws, tmp_path: Path) -> None:
    """Finding 1, at the fence: branch b, opened before branch a fenced orders, moves the service to eu-west-1; its
    fence once took the lane a's fence had stopped for its own and recorded an epoch that overlapped a's."""
    main, a, b = branches(tmp_path, OLD)
    east = deployed(OLD, "us-east-1", main)
    take(east, "/orders", count=10)  # 5000 ... 5009

    sharded = {**OLD, "counters": {"orders": {"start": 5000, "shards": 2}}}
    checkout(a, sharded)
    status, out, _ = fence(a / "cdk.json")
    assert status == 0 and "orders: fence 5010; epoch 1" in out
    synthesise(a / "cdk.json", sharded)
    a_east = deployed(sharded, "us-east-1", a)
    take(a_east, "/orders", count=3)

    checkout(b, MOVED)
    with pytest.raises(LedgerError, match="python -m tickets_admin fence"):
        synthesise(b / "cdk.json", MOVED)
    ledger, items = (b / "tickets.lock.json").read_text(), east.items()
    status, out, err = fence(b / "cdk.json")
    assert status == 1 and "stopped the old lanes" not in out
    assert "us-east-1: orders was stopped by fence " in err and "which " in err and "does not record" in err, err
    assert "git checkout BRANCH -- tickets.lock.json" in err and "Nothing was stopped or recorded" in err
    assert (b / "tickets.lock.json").read_text() == ledger and east.items() == items


def test_a_fence_meeting_a_region_recorded_but_never_deployed_says_why_and_what_to_do(aws, tmp_path: Path) -> None:
    """Finding 6: a second fence after eu-west-1 was recorded (synthesised) but not deployed said only "no table ...
    check --table and --region"."""
    config_file = checkout(tmp_path, OLD)
    init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(OLD)})
    east = deployed(OLD, "us-east-1", tmp_path)
    take(east, "/orders", count=3)
    two = {**OLD, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    checkout(tmp_path, two)
    assert fence(config_file)[0] == 0
    synthesise(config_file, two)  # eu-west-1 recorded; never deployed, so it has no table

    sharded = {**two, "counters": {"orders": {"start": 5000, "shards": 2}}}
    checkout(tmp_path, sharded)
    ledger, items = (tmp_path / "tickets.lock.json").read_text(), east.items()
    status, out, err = fence(config_file)
    assert status == 1 and "stopped the old lanes" not in out
    assert "eu-west-1: no table 'tickets-test' in eu-west-1" in err
    assert "recorded (synthesised) but never deployed has no table yet" in err and "deploy it first" in err, err
    assert "Nothing was stopped or recorded" in err
    assert (tmp_path / "tickets.lock.json").read_text() == ledger and east.items() == items


def test_a_fence_no_ledger_records_is_undone_by_its_id_unless_it_was_recorded(aws, tmp_path: Path) -> None:
    """The way out the refusal above names when the other line's ledger is lost: `fence --undo --fence-id ID` puts
    back the lanes that fence stopped (found by reading every region's table), refused once it was recorded."""
    config_file, east, west = two_regions(tmp_path)
    lost = tmp_path / "lost"
    lost.mkdir()
    shutil.copy(tmp_path / "tickets.lock.json", lost)
    checkout(lost, SHARDED)
    assert fence(lost / "cdk.json", "--region", "us-east-1")[0] == 0  # begun in a checkout whose ledger is lost
    fence_id = read_ledger_file(lost / "tickets.lock.json").services["tickets-counters"].fencing.id
    shutil.rmtree(lost)

    checkout(tmp_path, {**TWO, "counters": {"orders": {"start": 5000, "stride": 3}}})
    status, _, err = fence(config_file)
    assert status == 1 and f"fence --undo --fence-id {fence_id}` puts its lanes back" in err, err
    ledger = (tmp_path / "tickets.lock.json").read_text()
    status, out, err = fence(config_file, "--undo", "--fence-id", fence_id)
    assert status == 0, err
    assert "us-east-1: put back orders" in out and "eu-west-1: nothing was stopped" in out and "never recorded" in out
    assert (tmp_path / "tickets.lock.json").read_text() == ledger
    assert take(east, "/orders") == [5006]
    assert fence(config_file)[0] == 0  # this line's own fence now goes ahead

    status, _, err = fence(config_file, "--undo", "--fence-id", fence_id)  # nothing of it is left anywhere
    assert status == 0
    stopped_by_mine = next(item for item in east.items() if item["counter"]["S"] == "orders")["fencedBy"]["S"]
    status, _, err = fence(config_file, "--undo", "--fence-id", stopped_by_mine)  # recorded: its lanes are sealed
    assert status == 1 and "its lanes are sealed" in err and "cannot be undone; nothing was written" in err
