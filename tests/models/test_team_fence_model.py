"""Fences, region moves and retirements across a team's branches, proven on whole histories
(docs/explanation/ledger.md#teams, docs/explanation/epochs-and-fences.md).

The team model's sibling (tests/models/test_team_model.py), for layout changes: hypothesis generates what a team
does with one repository whose service starts in us-east-1 alone (regionSlots 1, `orders` from 5000). On a branch,
an edit of cdk.json (orders' shards, a region added, moved to, or removed, so retired) is synthesised with the
real ledger; when synthesis refuses it naming `python -m tickets_admin fence`, the operator runs the real command
(`tickets_admin fence`, in process, on moto's tables: one run for every region or one run per region), then
synthesises again; the change is committed only once synthesis accepts it, else abandoned (`fence --undo` where
there is one). Branches merge (cdk.json by `git merge-file`, the ledger taken from one side, the documented way
out, then synthesis again, with a fence where it asks for one). Any branch may be deployed: `make deploy` runs the
real pre-deploy check (tickets_deploy.predeploy.check) with CloudFormation's answers given from what each region's
stack runs, then each region's stack succeeds or rolls back; a removed region's stack keeps running. After each
deploy, callers take a block and a ticket of `orders` in every region with a stack, through the real handler,
built with the settings synthesis gives it (tickets_deploy.ledger.applied over that commit's ledger).

Every ticket is checked as it is issued: none twice across all regions; and a refused request changed no table.

On the code before the fence read other fences' stops it found finding 1 within 500 examples (6 minutes with shrinking),
the shortest counterexample replayed below (test_finding_1_*): a fence on one branch, a move to another region on a
branch opened before, its fence blind to the first, and a deploy that never read the region the first branch runs in.
`TICKETS_MODEL_EXAMPLES=300 pytest tests/models/test_team_fence_model.py` runs more histories than `make test`'s.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from moto import mock_aws
from test_team_model import cdk_json_text, merge_base, merge_text

from cloud_assembly import CloudFormationStandIn
from moto_deployment import COUNTER_TABLE, Region
from moto_deployment import test_client as moto_client
from tickets import lane_item
from tickets.epochs import fence_above, items_of
from tickets_admin.__main__ import main as tickets_admin
from tickets_deploy import predeploy
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_deploy.ledger import (
    LedgerError,
    Version,
    applied,
    from_text,
    layout_changes,
    read_ledger_file,
    record_epochs,
    record_services,
    version_id,
    write_ledger_file,
)
from tickets_deploy.rules import ConfigError

REGIONS = ("us-east-1", "eu-west-1")
BRANCHES = ("main", "a", "b")
TABLE = "tickets-counters"  # the service's name in the ledger (the handler's table in moto is COUNTER_TABLE)
ACCOUNT = "111111111111"  # every synthesis's account (a ledger of several refuses a fence)
# orders' shards 1 <-> 2; a region added (the first of REGIONS cdk.json lacks), the service moved there (every other
# region removed), or cdk.json's last region removed (its slot retired; its stack stays).
EDITS = ("shards", "add", "move", "remove")
OUTCOMES = ("every stack succeeds", *(f"{region} rolls back" for region in REGIONS))
FENCE_RUNS = ("every region", "one region a run")
EXAMPLES = int(os.environ.get("TICKETS_MODEL_EXAMPLES", "12"))
REFUSALS = {(503, "unavailable"), (409, "config_mismatch"), (409, "exhausted"), (404, "not_found")}


class Refused(Exception):
    """Synthesis refused the working copy: nothing is committed."""


@dataclass(frozen=True)
class Commit:
    id: int
    parents: tuple[int, ...]
    cdk_json: str
    ledger: str  # tickets.lock.json's text, as synthesis (and fence) left it


def run_admin(argv: list[str]) -> tuple[int, str]:
    """`python -m tickets_admin ARGV` in process: its status and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = tickets_admin([*argv, "--table", COUNTER_TABLE])
        except SystemExit as exit:  # argparse: an option this version does not have
            status = exit.code if isinstance(exit.code, int) else 2
    return status, out.getvalue()


class FenceTeamModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.commits: list[Commit] = []
        self.heads: dict[str, int] = {}
        self.deployed: dict[str, int] = {}  # region -> the commit its stack runs (a stack, once deployed)
        self.handlers: dict[tuple[str, int], Region] = {}
        self.issued: dict[str, dict[int, str]] = {}  # key -> ticket -> the region that issued it
        self.log: list[str] = []  # what the operators did and were told, for a failure's report
        self.aws = mock_aws()
        self.aws.start()
        self.scratch = Path(tempfile.mkdtemp(prefix="team-fence-model-"))

    def teardown(self) -> None:
        self.aws.stop()
        shutil.rmtree(self.scratch)

    # --- a working copy: synthesis with the real ledger, and the real fence -------------------------------

    def checkout(self, cdk_json: str, ledger: str) -> Path:
        """A working copy's files; returns its cdk.json."""
        directory = self.scratch / "checkout"
        directory.mkdir(exist_ok=True)
        (directory / "cdk.json").write_text(cdk_json)
        (directory / "tickets.lock.json").write_text(ledger)
        return directory / "cdk.json"

    def synthesise(self, config_file: Path) -> str:
        """What `cdk synth` does in the working copy: the ledger text it leaves there, or Refused."""
        ledger_path = config_file.parent / "tickets.lock.json"
        try:
            config = parse_config(json.loads(config_file.read_text())["context"]["tickets"])
            previous = read_ledger_file(ledger_path)
            write_ledger_file(ledger_path, record_services(previous, {config.table_name: config}, ACCOUNT))
        except (ValueError, KeyError, TypeError, ConfigError, LedgerError) as err:
            raise Refused(str(err)) from None
        return ledger_path.read_text()

    def synthesise_and_fence(self, cdk_json: str, ledger: str, runs: str) -> str:
        """Synthesis, and where it names the fence, the fence as the operator runs it, then synthesis again:
        the ledger to commit, or Refused (the change is abandoned: undone where fence can)."""
        config_file = self.checkout(cdk_json, ledger)
        try:
            return self.synthesise(config_file)
        except Refused as refused:
            if "python -m tickets_admin fence" not in str(refused):
                raise
        slots = from_text(ledger).services[TABLE].slots.values()
        self.fence(config_file, sorted({slot.region for slot in slots}), runs)
        try:
            return self.synthesise(config_file)
        except Refused:
            status, said = run_admin(["fence", "--undo", "--config", str(config_file)])
            self.log.append(f"fence --undo: {status} {said.strip()}")
            raise

    def fence(self, config_file: Path, needed: list[str], runs: str) -> None:
        """`python -m tickets_admin fence` in the working copy: once, or once per region that may hold old lanes."""
        arguments = [[]] if runs == "every region" else [["--region", region] for region in needed]
        for more in arguments:
            status, said = run_admin(["fence", "--config", str(config_file), *more])
            self.log.append(f"fence {' '.join(more)}: {status} {said.strip()}")
            if status != 0:
                return

    def commit(self, branch: str, parents: tuple[int, ...], cdk_json: str, ledger: str) -> None:
        self.commits.append(Commit(len(self.commits), parents, cdk_json, ledger))
        self.heads[branch] = len(self.commits) - 1

    def tickets(self, commit_id: int) -> dict:
        tickets: dict = json.loads(self.commits[commit_id].cdk_json)["context"]["tickets"]
        return tickets

    # --- a team's work ------------------------------------------------------------------------------------

    @initialize(
        seed=st.integers(0, 2**32 - 1),
        pull_requests=st.lists(st.sampled_from(EDITS[:-1]), min_size=2, max_size=2),  # "remove" needs two regions
        runs=st.sampled_from(FENCE_RUNS),
    )
    def start(self, seed: int, pull_requests: list[str], runs: str) -> None:
        """main deployed to us-east-1, and a pull request open on a and on b."""
        self.make_init(seed)
        for branch, edit in zip(BRANCHES[1:], pull_requests, strict=True):
            self.edit(branch, edit, runs)

    def make_init(self, seed: int = 0) -> None:
        self.lane_picks = random.Random(seed)
        tickets = {
            "regions": {"us-east-1": 0},
            "regionSlots": 1,
            "strictKeys": True,
            "counters": {"orders": {"start": 5000}},
        }
        path = self.scratch / "tickets.lock.json"
        write_ledger_file(path, record_services(None, {TABLE: parse_config(tickets)}, ACCOUNT, "make init"))
        self.commit("main", (), cdk_json_text(tickets), path.read_text())
        for branch in BRANCHES:
            self.heads[branch] = 0
        self.deploy_to("us-east-1", 0)

    @rule(branch=st.sampled_from(BRANCHES), edit=st.sampled_from(EDITS), runs=st.sampled_from(FENCE_RUNS))
    def edit(self, branch: str, edit: str, runs: str) -> None:
        """One change to cdk.json on a branch, synthesised (and fenced where synthesis says so)."""
        head = self.commits[self.heads[branch]]
        tickets = json.loads(head.cdk_json)["context"]["tickets"]
        if not self.apply(tickets, from_text(head.ledger).services[TABLE], edit):
            return
        cdk_json = cdk_json_text(tickets)
        try:
            ledger = self.synthesise_and_fence(cdk_json, head.ledger, runs)
        except Refused:
            return
        self.log.append(f"{branch}: {edit} committed")
        self.commit(branch, (head.id,), cdk_json, ledger)

    @staticmethod
    def apply(tickets: dict, ledger: Any, edit: str) -> bool:
        """The edit, as a person makes it: a region goes back to its recorded slot, else onto a slot never
        used, else onto a new one (regionSlots + 1). False: nothing to change."""
        regions: dict[str, int] = tickets["regions"]
        if edit == "shards":
            orders = tickets["counters"]["orders"]
            orders["shards"] = 3 - orders.get("shards", 1)
            return True
        if edit == "remove":
            if len(regions) == 1:
                return False
            del regions[list(regions)[-1]]
            return True
        missing = [region for region in REGIONS if region not in regions]
        if not missing:
            return False
        recorded = {slot.region: number for number, slot in ledger.slots.items()}
        taken = set(ledger.slots) | set(regions.values())
        free = [slot for slot in range(tickets["regionSlots"]) if slot not in taken]
        slot = recorded.get(missing[0], free[0] if free else tickets["regionSlots"])
        tickets["regionSlots"] = max(tickets["regionSlots"], slot + 1)
        tickets["regions"] = {missing[0]: slot} if edit == "move" else {**regions, missing[0]: slot}
        return True

    @precondition(lambda self: len({self.heads[b] for b in BRANCHES}) > 1)
    @rule(
        data=st.data(),
        resolution=st.sampled_from(["ours", "theirs"]),
        ledger_from=st.sampled_from(["ours", "theirs"]),
        runs=st.sampled_from(FENCE_RUNS),
    )
    def merge_branches(self, data: st.DataObject, resolution: str, ledger_from: str, runs: str) -> None:
        pairs = [(i, s) for i in BRANCHES for s in BRANCHES if self.heads[i] != self.heads[s]]
        into, source = data.draw(st.sampled_from(pairs))
        self.merge(into, source, resolution, ledger_from, runs)

    def merge(self, into: str, source: str, resolution: str, ledger_from: str, runs: str = FENCE_RUNS[0]) -> None:
        """git merge SOURCE into INTO: cdk.json merged line by line (conflicts resolved by `resolution`), the
        ledger taken from one side, then synthesis (and a fence where it asks for one); committed if accepted."""
        ours, theirs = self.commits[self.heads[into]], self.commits[self.heads[source]]
        base = self.commits[merge_base(self.commits, ours.id, theirs.id)]
        if base.id == theirs.id:
            return  # already merged
        cdk_json = merge_text(base.cdk_json, ours.cdk_json, theirs.cdk_json, resolution, self.scratch)
        ledger = (ours if ledger_from == "ours" else theirs).ledger
        try:
            ledger = self.synthesise_and_fence(cdk_json, ledger, runs)
        except Refused:
            return
        self.log.append(f"{source} merged into {into}")
        self.commit(into, (ours.id, theirs.id), cdk_json, ledger)

    # --- deploys ------------------------------------------------------------------------------------------

    @rule(data=st.data(), outcome=st.sampled_from(OUTCOMES))
    def deploy_a_branch(self, data: st.DataObject, outcome: str) -> None:
        """`make deploy` from a branch whose head some region of its config does not run yet."""
        stale = [branch for branch in BRANCHES if self.undeployed(self.heads[branch])]
        if stale:
            self.deploy(data.draw(st.sampled_from(stale)), outcome)

    def undeployed(self, commit_id: int) -> bool:
        return any(self.deployed.get(region) != commit_id for region in self.tickets(commit_id)["regions"])

    def deploy(self, branch: str, outcome: str = OUTCOMES[0]) -> None:
        """`make deploy` from a branch: the pre-deploy check, then each region of its config (by name) succeeds
        or rolls back (the one `outcome` names), staying on what it ran; a region removed from cdk.json keeps
        its stack."""
        commit = self.commits[self.heads[branch]]
        regions = sorted(self.tickets(commit.id)["regions"])
        problems = self.predeploy_problems(commit, regions)
        self.log.append(f"deploy {branch} ({', '.join(regions)}, {outcome}): {problems or 'went ahead'}")
        if problems:
            return
        for region in regions:
            if outcome != f"{region} rolls back":
                self.deploy_to(region, commit.id)
        self.traffic("block", 3)  # callers use every region as soon as it is deployed
        self.traffic("ticket", 1)

    def predeploy_problems(self, commit: Commit, regions: list[str]) -> list[str]:
        """tickets_deploy.predeploy's check of this commit's cloud assembly (a stack per region of its config),
        CloudFormation answering from what each region's stack runs."""
        ledger = from_text(commit.ledger)
        stacks = [predeploy.AssemblyStack(f"Tickets-{region}", region, ledger.version, ()) for region in regions]
        cloud = CloudFormationStandIn(self.running, (TABLE,))
        return predeploy.check(stacks, ledger, cloud.client, report=lambda _: None)

    def running(self, region: str) -> str | None:
        """The ledger version the region's stack runs (None: it has none)."""
        commit = self.deployed.get(region)
        return None if commit is None else from_text(self.commits[commit].ledger).version

    def deploy_to(self, region: str, commit_id: int) -> None:
        self.deployed[region] = commit_id
        self.handler(region)  # CloudFormation creates the region's table with its first stack

    # --- callers ------------------------------------------------------------------------------------------

    def handler(self, region: str) -> Region:
        """The region's function as synthesis built it from the commit its stack runs."""
        commit_id = self.deployed[region]
        if (region, commit_id) not in self.handlers:
            tickets = self.tickets(commit_id)
            deployment = Region(tickets, region)
            service = from_text(self.commits[commit_id].ledger).services[TABLE]
            deployment.settings = region_settings(applied(parse_config(tickets), service), region)
            deployment.pick_lanes(self.lane_picks.shuffle)
            self.handlers[region, commit_id] = deployment
        return self.handlers[region, commit_id]

    def traffic(self, route: str, count: int) -> None:
        """Callers in every region with a stack take orders tickets."""
        for region in sorted(self.deployed):
            self.issue(region, route, count)

    def issue(self, region: str, route: str, count: int) -> None:
        handler = self.handler(region)
        before = handler.items()
        path = "/_blocks/orders" if route == "block" else "/orders"
        answer = handler.get(path, query={"count": count if route == "block" else 1})
        if answer.status != 200:
            assert handler.items() == before, f"a refused request ({answer.body}) changed {region}'s table"
            assert (answer.status, answer.body["error"]) in REFUSALS, answer
            return
        if route == "block":
            tickets = list(range(answer.body["first"], answer.body["last"] + 1, answer.body["step"]))
        else:
            tickets = [answer.body["ticket"]]
        seen = self.issued.setdefault("orders", {})
        for ticket in tickets:
            assert ticket not in seen, f"orders {ticket} issued twice: by {seen[ticket]} and by {region}\n" + "\n".join(
                self.log
            )
            seen[ticket] = region


FenceTeamModel.TestCase.settings = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # deterministic: the same histories on every run
    database=None,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_no_history_of_fences_and_moves_repeats_a_ticket = FenceTeamModel.TestCase


@pytest.fixture
def model():
    machine = FenceTeamModel()
    yield machine
    machine.teardown()


# --- finding 1: the model's shortest counterexample on the code before its fix, replayed ---------------------------
#
# On the code before the fix (its fence and pre-deploy check; TICKETS_MODEL_EXAMPLES=500) the model failed with:
#     state.start(seed=0, runs='every region', pull_requests=['shards', 'move'])
#     state.deploy_a_branch(data=data(...), outcome='every stack succeeds')   # Draw 1: 'a'
#     state.deploy_a_branch(data=data(...), outcome='every stack succeeds')   # Draw 2: 'b'
#     AssertionError: orders 5001 issued twice: by eu-west-1 and by us-east-1
# Branch a fences orders to 2 shards (epoch 1 at 5000); branch b, opened from the same main, moves the service to
# eu-west-1 (slot 1 of 2, us-east-1 retired): its fence took the lane a's fence had stopped for its own and recorded
# its own epoch 1 at 5000; a is deployed to us-east-1, b to eu-west-1, whose check read eu-west-1 alone.


def finding_1(model: FenceTeamModel) -> None:
    model.start(seed=0, runs="every region", pull_requests=["shards", "move"])
    model.deploy("a")
    model.deploy("b")


class BeforeTheFix(FenceTeamModel):
    """The fence and the pre-deploy check as they were before the fix (the model's mutation): the fence took a lane
    stopped by another fence for one of its own; the check read only the regions of the cloud assembly."""

    old_fence = True
    old_predeploy = True

    def fence(self, config_file: Path, needed: list[str], runs: str) -> None:
        if not self.old_fence:
            super().fence(config_file, needed, runs)
            return
        path = config_file.parent / "tickets.lock.json"
        file = read_ledger_file(path)
        config = parse_config(json.loads(config_file.read_text())["context"]["tickets"])
        recorded = []
        for change in layout_changes(config, file.services[TABLE]):
            names = items_of(change.key, change.number - 1, change.old.shards)
            lasts = [self.stop_any(region, name) for region in needed for name in names]
            recorded.append(change.epoch(fence_above(change.old.start, lasts)))
        services = {**file.services, TABLE: record_epochs(file.services[TABLE], recorded)}
        version = Version(version_id(file.version, services), file.version, "fence (before the fix)")
        write_ledger_file(path, replace(file, services=services, versions=(*file.versions, version)))

    @staticmethod
    def stop_any(region: str, name: str) -> int | None:
        """Stop the lane unless it is stopped already, by whichever fence; its final last."""
        for request in (lane_item.stop("before-37"), lane_item.stop_unwritten("before-37")):
            with contextlib.suppress(ClientError):
                moto_client(region).update_item(TableName=COUNTER_TABLE, Key={"counter": {"S": name}}, **request)
        item = moto_client(region).get_item(TableName=COUNTER_TABLE, Key={"counter": {"S": name}}, ConsistentRead=True)
        return lane_item.number(item.get("Item"), lane_item.LAST)

    def predeploy_problems(self, commit: Commit, regions: list[str]) -> list[str]:
        if not self.old_predeploy:
            return super().predeploy_problems(commit, regions)
        ledger = from_text(commit.ledger)
        stacks = [predeploy.AssemblyStack(f"Tickets-{region}", region, ledger.version, ()) for region in regions]
        blind = CloudFormationStandIn(lambda region: self.running(region) if region in regions else None, (TABLE,))
        return predeploy.check(stacks, ledger, blind.client, report=lambda _: None)


def test_finding_1_replayed_repeats_tickets_with_the_fence_and_check_before_the_fix() -> None:
    model = BeforeTheFix()
    try:
        with pytest.raises(AssertionError, match="orders 5001 issued twice: by eu-west-1 and by us-east-1"):
            finding_1(model)
    finally:
        model.teardown()


def test_finding_1_replayed_is_refused_by_the_fence_and_its_way_out_issues_above_both(model: FenceTeamModel) -> None:
    finding_1(model)
    assert model.heads["b"] == 0, "b's move was committed"
    assert "us-east-1: orders was stopped by fence " in "\n".join(model.log)
    assert model.deployed == {"us-east-1": model.heads["a"]}  # b's deploy (main's version) was refused
    assert "is not an ancestor of" in model.log[-1]

    model.merge("b", "a", "ours", ledger_from="theirs")  # the way out: b takes a's change and its ledger ...
    model.edit("b", "move", FENCE_RUNS[1])  # ... and makes its move on top: a fence above a's lanes (epoch 2)
    merged = from_text(model.commits[model.heads["b"]].ledger).services[TABLE]
    assert [(epoch.key, epoch.number) for epoch in merged.epochs][-1] == ("orders", 2)
    model.deploy("b")
    assert model.deployed["eu-west-1"] == model.heads["b"]
    assert min(t for t, region in model.issued["orders"].items() if region == "eu-west-1") >= merged.epochs[-1].fence


def test_finding_1_with_the_fence_before_the_fix_is_refused_by_the_pre_deploy_check() -> None:
    """The check alone: b's move recorded as the fence before the fix recorded it; b's deploy reads us-east-1, which
    b's ledger retired, finds a's version there, and stops."""
    model = BeforeTheFix()
    model.old_predeploy = False
    try:
        finding_1(model)
        assert model.heads["b"] != 0 and "eu-west-1" not in model.deployed
        assert (
            "us-east-1 (slot 0, retired, of tickets-counters): stack Tickets-us-east-1 (not in this deploy) runs"
            in (model.log[-1])
        )
    finally:
        model.teardown()
