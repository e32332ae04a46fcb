"""The rollout rule for a team, proven on whole histories (docs/explanation/ledger.md#teams).

A stateful model, the rollout model's sibling (tests/models/test_rollout_model.py): hypothesis generates what a
team does with one repository. Branches start from main; a change to cdk.json is committed on a branch
only once synthesis accepted it (the real ledger, read from and written to the file's text); branches
merge with git's own three-way line merge (`git merge-file`) of cdk.json and tickets.lock.json, each
conflict resolved by taking ours, theirs or both sides' lines, or the whole ledger taken from one side
(the documented way out), then synthesised again; a merge synthesis refuses is not committed. Any branch
may be deployed: `make deploy` checks every region of the branch's config with the real pre-deploy
check (tickets_deploy.predeploy, DescribeStacks answered from the model's regions), then each region's
stack may succeed or roll back. Between steps it issues tickets through the real handler on moto (one
table per region) and runs `tickets_admin raise` from a checkout of the version a region runs. A local server started
from another checkout (one branch's cdk.json beside another's ledger, or none) issues there too when its checks at
start let it (tickets_local/deployment.py); a region's opaque key may be replaced (tests/replaced_keys.py).

After every step: no ticket of a key was issued twice across all regions, and a refused request changed
no table.

TICKETS_TEAM_MODEL=today runs the same model on today's ledger (one service per file, no versions, no
lineage check, no pre-deploy check): it finds the hole of two pull requests merged by git.
`TICKETS_MODEL_EXAMPLES=200 pytest tests/models/test_team_model.py` runs more histories than `make test`'s.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from moto import mock_aws
from replaced_keys import CODES, ReplacedKeys

from cloud_assembly import CloudFormationStandIn
from moto_deployment import COUNTER_TABLE, Region
from tickets_admin.__main__ import main as tickets_admin
from tickets_admin.listing import scan
from tickets_deploy import predeploy
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_deploy.field import encode_number
from tickets_deploy.ledger import (
    COMMENT,
    Ledger,
    LedgerError,
    LedgerFile,
    from_text,
    read_ledger_file,
    record,
    record_services,
    to_text,
    upgrade_text,
    write_ledger_file,
)
from tickets_deploy.rules import ConfigError
from tickets_local.deployment import LocalDeployment, ServedLayout, check_table

REGION_SLOTS = 2  # as in the issue: two regions, so a start of 1000 moves a lane onto the other region's
REGIONS = ("us-east-1", "eu-west-1")
BRANCHES = ("main", "a", "b")
KEYS = ("orders", "foo")  # orders is configured from make init on; a branch may configure foo
# Layouts foo may be given; {} is the unconfigured layout. (The rollout model covers the default key,
# strides, regions and refused changes on one line of versions; this model, what branches add.)
LAYOUTS = ({}, {"start": 1000}, {"shards": 2})
EDITS = (("strictKeys", True), ("strictKeys", False), *(("foo", layout) for layout in LAYOUTS))
EXAMPLES = int(os.environ.get("TICKETS_MODEL_EXAMPLES", "15"))
TODAY = os.environ.get("TICKETS_TEAM_MODEL") == "today"
TABLE = "tickets-counters"


class Refused(Exception):
    """Synthesis refused the working copy: nothing is committed."""


@dataclass(frozen=True)
class Commit:
    id: int
    parents: tuple[int, ...]
    cdk_json: str  # the file's text
    ledger: str  # tickets.lock.json's text, as synthesis left it


def cdk_json_text(tickets: dict) -> str:
    """cdk.json as a person keeps it: one setting a line, so git merges it line by line."""
    return json.dumps({"context": {"tickets": tickets}}, indent=2, sort_keys=True) + "\n"


def todays_ledger_text(ledger: Ledger) -> str:
    """The ledger file as Tickets wrote it before versions (format 1: one service, no history)."""

    def entries(name: str, rows: dict[str, Any]) -> str:
        if not rows:
            return f'  "{name}": {{}}'
        lines = [f"    {json.dumps(key)}: {json.dumps(value, sort_keys=True)}" for key, value in rows.items()]
        return f'  "{name}": {{\n' + ",\n".join(lines) + "\n  }"

    counters = {
        key: {"start": encode_number(c.start), "stride": encode_number(c.stride), "shards": c.shards}
        for key, c in sorted(ledger.counters.items())
    }
    slots = {
        str(slot): {
            "region": s.region,
            **({"retired": True} if s.retired else {}),
            **({"accounts": list(s.accounts)} if s.accounts else {}),
        }
        for slot, s in sorted(ledger.slots.items())
    }
    fields = [
        f'  "//": {json.dumps(COMMENT)}',
        entries("counters", counters),
        f'  "defaultKeysServed": {json.dumps(sorted(ledger.default_keys_served))}',
        f'  "regionSlots": {ledger.region_slots}',
        entries("slots", slots),
        f'  "tableName": {json.dumps(ledger.table_name)}',
        f'  "unconfiguredKeysServed": {json.dumps(ledger.unconfigured_keys_served)}',
    ]
    return "{\n" + ",\n".join(fields) + "\n}\n"


def merge_text(base: str, ours: str, theirs: str, resolution: str, scratch: Path) -> str:
    """git merge-file: a three-way line merge; a conflict resolved by `resolution` (ours, theirs, union)."""
    paths = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        paths.append(scratch / f"merge-{name}")
        paths[-1].write_text(text)
    merged = subprocess.run(
        ["git", "merge-file", "-p", f"--{resolution}", *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert merged.returncode >= 0, merged.stderr
    return merged.stdout


def merge_base(commits: list[Any], one: int, other: int) -> int:
    """git merge-base: the newest commit both `one` and `other` descend from (commits by id, each with `parents`)."""

    def ancestors(commit_id: int) -> set[int]:
        seen, todo = set(), [commit_id]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(commits[current].parents)
        return seen

    return max(ancestors(one) & ancestors(other))


def keep_both_lines(text: str) -> str:
    """What a person does after keeping both sides' lines in a JSON list: put the comma back."""
    return re.sub(r"\}\n(\s*)\{", r"},\n\1{", text)


class TeamModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.today = TODAY
        self.commits: list[Commit] = []
        self.heads: dict[str, int] = {}
        self.deployed: dict[str, int] = {}  # region -> the commit its stack runs
        self.issued: dict[str, dict[int, str]] = {}  # key -> ticket -> the region that issued it
        self.handlers: dict[tuple[str, int], Region] = {}
        self.replaced = ReplacedKeys()  # an opaque counter beside the keys, on today's ledger's successor only
        self.served: list[LedgerFile] = []  # the ledgers servers from other checkouts served with
        # (region, key) where a server from another checkout wrote a lane: of its checkout's layout, which a deployed
        # version of another layout meets as a lane item it must refuse (config_mismatch), never issue from
        self.foreign_lanes: set[tuple[str, str]] = set()
        self.aws = mock_aws()
        self.aws.start()
        self.scratch = Path(tempfile.mkdtemp(prefix="team-model-"))

    def teardown(self) -> None:
        self.aws.stop()
        shutil.rmtree(self.scratch)

    # --- synthesis: the real ledger, through the file's text -----------------------------------------

    def synthesise(self, cdk_json: str, ledger_text: str) -> str:
        """What `cdk synth` does in a working copy: the ledger text it leaves, or Refused."""
        try:
            config = parse_config(json.loads(cdk_json)["context"]["tickets"])
        except (ValueError, KeyError, TypeError, ConfigError) as err:
            raise Refused(f"cdk.json: {err}") from None
        path = self.scratch / "tickets.lock.json"
        path.write_text(ledger_text)
        try:
            if self.today:
                try:
                    previous = upgrade_text(ledger_text).services[TABLE]
                except (ValueError, KeyError, TypeError) as err:
                    raise LedgerError(f"not a Tickets ledger ({err})") from None
                return todays_ledger_text(record(config, previous))
            write_ledger_file(path, record_services(read_ledger_file(path), {config.table_name: config}))
        except LedgerError as err:
            raise Refused(str(err)) from None
        return path.read_text()

    def ledger_file(self, commit: Commit) -> LedgerFile:
        return from_text(commit.ledger)

    def commit(self, branch: str, parents: tuple[int, ...], cdk_json: str, ledger: str) -> None:
        self.commits.append(Commit(len(self.commits), parents, cdk_json, ledger))
        self.heads[branch] = len(self.commits) - 1

    def config(self, commit_id: int) -> dict:
        tickets: dict = json.loads(self.commits[commit_id].cdk_json)["context"]["tickets"]
        return tickets

    # --- a team's work -------------------------------------------------------------------------------

    @initialize(
        strict=st.booleans(),
        orders=st.sampled_from(LAYOUTS),
        seed=st.integers(0, 2**32 - 1),
        pull_requests=st.lists(st.sampled_from(EDITS), min_size=2, max_size=2),
    )
    def start(self, strict: bool, orders: dict, seed: int, pull_requests: list[tuple[str, Any]]) -> None:
        """A team's usual state: main deployed to both regions, and a pull request open on a and on b."""
        self.make_init(strict, orders, seed)
        for branch, edit in zip(BRANCHES[1:], pull_requests, strict=True):
            self.edit_config(branch, edit)

    def make_init(self, strict: bool, orders: dict, seed: int) -> None:
        """`make init` on main, committed, then deployed to both regions."""
        self.lane_picks = random.Random(seed)
        tickets = {"regions": dict(zip(REGIONS, range(REGION_SLOTS), strict=True)), "regionSlots": REGION_SLOTS}
        tickets.update(strictKeys=strict, counters={"orders": dict(orders), **({} if self.today else {"codes": CODES})})
        config = parse_config(tickets)
        if self.today:
            ledger = todays_ledger_text(record(config, None))
        else:
            path = self.scratch / "tickets.lock.json"
            write_ledger_file(path, record_services(None, {TABLE: config}, None, "make init"))
            ledger = path.read_text()
        self.commit("main", (), cdk_json_text(tickets), ledger)
        for branch in BRANCHES:
            self.heads[branch] = 0
        for region in REGIONS:
            self.deployed[region] = 0

    @rule(branch=st.sampled_from(BRANCHES[1:]))
    def start_branch(self, branch: str) -> None:
        """git switch -c BRANCH main (a branch name reused starts again from main)."""
        self.heads[branch] = self.heads["main"]

    def change(self, branch: str, edit) -> None:
        """Edit cdk.json on a branch and synthesise; committed (with the ledger) only if accepted."""
        if branch not in self.heads:
            return
        head = self.commits[self.heads[branch]]
        tickets = json.loads(head.cdk_json)["context"]["tickets"]
        edit(tickets)
        cdk_json = cdk_json_text(tickets)
        try:
            ledger = self.synthesise(cdk_json, head.ledger)
        except Refused:
            return
        self.commit(branch, (head.id,), cdk_json, ledger)

    @rule(branch=st.sampled_from(BRANCHES), edit=st.sampled_from(EDITS))
    def edit_config(self, branch: str, edit: tuple[str, Any]) -> None:
        """One change to cdk.json on a branch: strictKeys, or foo configured with a layout."""
        setting, value = edit
        if setting == "strictKeys":
            self.change(branch, lambda tickets: tickets.update(strictKeys=value))
        else:
            self.configure_foo(branch, value)

    def configure_foo(self, branch: str, layout: dict) -> None:
        self.change(branch, lambda tickets: tickets["counters"].update(foo=dict(layout)))

    def set_strict_keys(self, branch: str, strict: bool) -> None:
        self.change(branch, lambda tickets: tickets.update(strictKeys=strict))

    def merge_base(self, one: int, other: int) -> int:
        return merge_base(self.commits, one, other)

    @precondition(lambda self: len({self.heads[b] for b in BRANCHES}) > 1)
    @rule(
        data=st.data(),
        resolution=st.sampled_from(["ours", "theirs", "union"]),
        ledger_from=st.sampled_from([None, "ours", "theirs"]),
    )
    def merge_branches(self, data: st.DataObject, resolution: str, ledger_from: str | None) -> None:
        """Two branches whose heads differ."""
        pairs = [(i, s) for i in BRANCHES for s in BRANCHES if self.heads[i] != self.heads[s]]
        into, source = data.draw(st.sampled_from(pairs))
        self.merge(into, source, resolution, ledger_from)

    def merge(self, into: str, source: str, resolution: str, ledger_from: str | None) -> None:
        """git merge SOURCE into INTO: cdk.json and the ledger merged line by line, conflicts resolved
        by `resolution`, or the whole ledger taken from one side (`git checkout --ours/--theirs`); then
        synthesis, and a commit only if it accepts the result."""
        if into == source or into not in self.heads or source not in self.heads:
            return
        ours, theirs = self.commits[self.heads[into]], self.commits[self.heads[source]]
        base = self.commits[self.merge_base(ours.id, theirs.id)]
        if base.id == theirs.id:
            return  # already merged
        cdk_json = merge_text(base.cdk_json, ours.cdk_json, theirs.cdk_json, resolution, self.scratch)
        if ledger_from is not None:
            ledger = {"ours": ours, "theirs": theirs}[ledger_from].ledger
        else:
            ledger = merge_text(base.ledger, ours.ledger, theirs.ledger, resolution, self.scratch)
            if resolution == "union":
                ledger = keep_both_lines(ledger)
        try:
            ledger = self.synthesise(cdk_json, ledger)
        except Refused:
            return  # the merge is not committed
        self.commit(into, (ours.id, theirs.id), cdk_json, ledger)

    # --- deploys --------------------------------------------------------------------------------------

    @rule(branch=st.sampled_from(BRANCHES), outcomes=st.lists(st.booleans(), min_size=2, max_size=2))
    def deploy(self, branch: str, outcomes: list[bool]) -> None:
        """`make deploy` from a branch: the pre-deploy check over every region of its config, then each
        region's stack (in the order of their names) succeeds or rolls back, staying on what it ran."""
        if branch not in self.heads:
            return
        commit = self.commits[self.heads[branch]]
        regions = sorted(self.config(commit.id)["regions"])
        if not self.today and self.predeploy_problems(commit, regions):
            return  # stopped before CloudFormation started
        for region, succeeded in zip(regions, outcomes, strict=False):
            if succeeded:
                self.deployed[region] = commit.id

    def predeploy_problems(self, commit: Commit, regions: list[str]) -> list[str]:
        """tickets_deploy.predeploy's check of this commit's assembly, DescribeStacks answered from what
        each region's stack runs."""
        ledger = self.ledger_file(commit)
        stacks = [predeploy.AssemblyStack(f"Tickets-{region}", region, ledger.version, ()) for region in regions]
        cloud = CloudFormationStandIn(lambda region: self.ledger_file(self.commits[self.deployed[region]]).version)
        return predeploy.check(stacks, ledger, cloud.client, report=lambda _: None)

    # --- traffic and operators ------------------------------------------------------------------------

    def handler(self, region: str) -> Region:
        commit_id = self.deployed[region]
        if (region, commit_id) not in self.handlers:
            self.handlers[region, commit_id] = self.replaced.give(Region(self.config(commit_id), region), region)
            self.handlers[region, commit_id].pick_lanes(self.lane_picks.shuffle)
        return self.handlers[region, commit_id]

    @rule(
        key=st.sampled_from(KEYS),
        route=st.sampled_from(["ticket", "block"]),
        count=st.one_of(st.integers(1, 5), st.integers(400, 1000)),  # enough to reach a start of 1000
    )
    def traffic(self, key: str, route: str, count: int) -> None:
        """Callers in every region take tickets of one key."""
        for region in REGIONS:
            self.issue(region, key, route, count)

    def issue(self, region: str, key: str, route: str, count: int) -> None:
        handler = self.handler(region)
        before = handler.items()
        path = f"/_blocks/{key}" if route == "block" else f"/{key}"
        answer = handler.get(path, query={"count": count if route == "block" else 1})
        if answer.status != 200:
            assert handler.items() == before, f"a refused request ({answer.body}) changed {region}'s table"
            mismatch = self.today or (region, key) in self.foreign_lanes
            refusals = {(404, "not_found"), (409, "exhausted")} | ({(409, "config_mismatch")} if mismatch else set())
            assert (answer.status, answer.body["error"]) in refusals, answer
            return
        if route == "block":
            tickets = list(range(answer.body["first"], answer.body["last"] + 1, answer.body["step"]))
        else:
            tickets = [answer.body["ticket"]]
        seen = self.issued.setdefault(key, {})
        for ticket in tickets:
            assert ticket not in seen, f"{key} {ticket} issued twice: by {seen[ticket]} and by {region}"
            seen[ticket] = region

    @precondition(lambda self: not self.today)
    @rule(region=st.sampled_from(REGIONS), seed=st.integers(0, 2**32 - 1))
    def replace_a_key(self, region: str, seed: int) -> None:
        self.replaced.replace(region, seed)
        self.handlers = {(r, c): handler for (r, c), handler in self.handlers.items() if r != region}

    @precondition(lambda self: not self.today)
    @rule(region=st.sampled_from(REGIONS), count=st.integers(1, 20))
    def issue_ids(self, region: str, count: int) -> None:
        self.replaced.take(self.handler(region), region, count)

    @precondition(lambda self: not self.today)
    @rule(
        region=st.sampled_from(REGIONS),
        config_from=st.sampled_from(BRANCHES),
        ledger_from=st.sampled_from((None, *BRANCHES)),
        key=st.sampled_from(KEYS),
    )
    def serve_from_another_checkout(self, region: str, config_from: str, ledger_from: str | None, key: str) -> None:
        """A local server on a region's table, started from another checkout: one branch's cdk.json beside another's
        ledger, or none. It serves only what its checks at start let it (tickets_local/deployment.py); what it
        then issues must never repeat a ticket either."""
        config = parse_config(self.config(self.heads[config_from]))
        file = None if ledger_from is None else self.ledger_file(self.commits[self.heads[ledger_from]])
        if file is not None and not self.on_the_deployed_line(file):
            # A second line of history: predeploy refuses to deploy it beside the first, but a local server has no
            # deployed state to check it against (docs/explanation/threat-model.md): its operator's to avoid.
            return
        layout = ServedLayout(LocalDeployment(config, region), None, file, without_ledger=False)
        try:
            layout.require(persistent=True)
            server = Region(self.config(self.heads[config_from]), region)
            check_table(list(scan(server.client, COUNTER_TABLE)), layout.deployment.config, layout.ledger)
        except ConfigError:
            return
        server.settings = region_settings(layout.deployment.config, region)
        server.pick_lanes(self.lane_picks.shuffle)
        if file is not None:
            self.served.append(file)
        answer = server.get(f"/{key}")
        if answer.status != 200:  # the table's conditions refuse a lane of another layout: nothing written
            assert answer.body["error"] in ("not_found", "exhausted", "config_mismatch"), answer
            return
        self.foreign_lanes.add((region, key))
        seen = self.issued.setdefault(key, {})
        assert answer.body["ticket"] not in seen, f"{key} {answer.body['ticket']} issued twice: by another checkout"
        seen[answer.body["ticket"]] = region

    @rule(region=st.sampled_from(REGIONS), key=st.sampled_from(KEYS), above=st.integers(0, 1500))
    def raise_key(self, region: str, key: str, above: int) -> None:
        """`python -m tickets_admin raise` from a checkout of the commit the region runs."""
        commit = self.commits[self.deployed[region]]
        checkout = self.scratch / f"checkout-{commit.id}"
        checkout.mkdir(exist_ok=True)
        (checkout / "cdk.json").write_text(commit.cdk_json)
        # today's ledger (format 1) as its reader read it, now by the upgrade
        (checkout / "tickets.lock.json").write_text(
            to_text(upgrade_text(commit.ledger)) if self.today else commit.ledger
        )
        handler = self.handler(region)
        before = handler.items()
        argv = ["raise", key, "--above", str(above), "--config", str(checkout / "cdk.json"), "--region", region]
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            status = tickets_admin([*argv, "--table", COUNTER_TABLE])
        if status != 0 and err.getvalue().startswith("error:"):
            assert handler.items() == before, f"a refused raise changed {region}'s table: {err.getvalue()}"

    # --- what must hold after every step ------------------------------------------------------------------

    def on_the_deployed_line(self, file: LedgerFile) -> bool:
        """Is `file`'s version one the other's ancestor with every deployed version and every version served?"""
        running = [self.ledger_file(self.commits[c]) for c in set(self.deployed.values())] + self.served
        x = file.version or ""
        return all(file.is_ancestor(y := (one.version or ""), x) or one.is_ancestor(x, y) for one in running)

    @invariant()
    def every_deployed_version_lies_on_one_line(self) -> None:
        """With lineage: every version a region runs is an ancestor of main's or of a branch's head, and
        any two deployed versions are one the other's ancestor (the rollout rule's premise)."""
        if self.today or not self.deployed:
            return
        running = [self.ledger_file(self.commits[c]) for c in set(self.deployed.values())]
        for one in running:
            for other in running:
                x, y = one.version or "", other.version or ""
                assert one.is_ancestor(y, x) or other.is_ancestor(x, y), f"regions run {x} and {y}: two lines"


TeamModel.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_no_team_history_repeats_a_ticket = TeamModel.TestCase


# --- hole 1, step by step: found on today's ledger, refused with lineage ---------------------------------


def hole_1(model: TeamModel) -> None:
    """The issue's two pull requests: A serves unconfigured keys, B configures foo with its own start;
    A is deployed everywhere, both are merged, main reaches one region; foo is issued in both."""
    model.make_init(strict=True, orders={}, seed=0)
    model.start_branch("a")
    model.set_strict_keys("a", False)
    model.start_branch("b")
    model.configure_foo("b", {"start": 1000})
    assert len(model.commits) == 3, "each pull request synthesises on its own branch"
    model.deploy("a", [True, True])
    model.merge("main", "a", "ours", None)
    model.merge("main", "b", "ours", None)
    model.deploy("main", [True, False])  # eu-west-1's stack is updated, us-east-1's rolls back: it stays on A
    model.issue("us-east-1", "foo", "block", 600)  # A: unconfigured, slot 0: 1, 3, ..., 1199
    model.issue("eu-west-1", "foo", "block", 2)


@pytest.mark.parametrize("today", [True, False], ids=["today", "lineage"])
def test_hole_1_repeats_tickets_on_todays_ledger_and_is_refused_with_lineage(today):
    model = TeamModel()
    model.today = today
    try:
        if today:
            with pytest.raises(AssertionError, match=r"foo 1001 issued twice: by us-east-1 and by eu-west-1"):
                hole_1(model)
            return
        hole_1(model)
        main = model.commits[model.heads["main"]]
        assert json.loads(main.cdk_json)["context"]["tickets"]["strictKeys"] is False
        assert "foo" not in json.loads(main.cdk_json)["context"]["tickets"]["counters"]  # B's merge refused
        for resolution in ("ours", "theirs", "union"):
            model.merge("main", "b", resolution, None)
            assert model.heads["main"] == main.id
        model.merge("main", "b", "ours", "ours")  # the way out: A's ledger, B's change synthesised on top
        assert model.heads["main"] == main.id  # refused: foo after unconfigured keys were served
        model.merge("main", "b", "ours", "theirs")  # B's ledger, A's change on top: accepted ...
        assert model.heads["main"] != main.id
        merged = model.commits[model.heads["main"]]
        problems = model.predeploy_problems(merged, list(REGIONS))
        assert len(problems) == 2 and all("is not an ancestor of" in p for p in problems)  # ... never deployed
    finally:
        model.teardown()
