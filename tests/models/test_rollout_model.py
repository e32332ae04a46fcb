"""The rollout rule, proven on whole histories (docs/explanation/ledger.md#the-rollout-rule).

A stateful model: hypothesis generates histories of cdk.json changes (regions added, moved and removed,
counters with their layouts, max changes, strictKeys on and off, the default key moved, and changes the
ledger must refuse), runs each through the real ledger, and deploys the accepted versions region by
region in any order: a region may be updated, rolled back or left on any earlier accepted version.
Between deploys it issues single tickets, lists and range blocks in random regions through the real
handler on moto (one table per region), and runs `tickets_admin raise` now and then. A server started from another
checkout (any version's cdk.json, or an edit the ledger refused, with no ledger, an older one or the newest) issues
there too when the local server's checks at start let it (tickets_local/deployment.py), and a key replaced is
refused (an opaque counter's key version whose fingerprint the table recorded). After every step:
no ticket of a key was issued twice across all regions, every ticket lies on the lane its key's
recorded layout gives the region that issued it, and no request was refused for a changed layout.

`TICKETS_MODEL_EXAMPLES=500 pytest tests/models/test_rollout_model.py` runs more histories than `make test`'s.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from moto import mock_aws
from replaced_keys import CODES, ReplacedKeys

from moto_deployment import COUNTER_TABLE, Region
from tickets_admin.__main__ import main as tickets_admin
from tickets_admin.listing import scan
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_deploy.ledger import (
    UNCONFIGURED,
    CounterRecord,
    Ledger,
    LedgerError,
    LedgerFile,
    record_services,
    write_ledger_file,
)
from tickets_deploy.rules import ConfigError
from tickets_local.deployment import LocalDeployment, ServedLayout, check_table

REGION_SLOTS = 3
REGIONS = ("us-east-1", "eu-west-1", "ap-south-1")
KEYS = ("default", "orders", "foo", "bar")
# Layouts a counter may be given; {} is the unconfigured layout.
LAYOUTS = ({}, {"start": 1000}, {"shards": 2}, {"stride": 3}, {"start": 7, "shards": 3})
MAXES = (None, 40, 3000)
EXAMPLES = int(os.environ.get("TICKETS_MODEL_EXAMPLES", "30"))


class Rollouts(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.versions: list[dict] = []  # every config the ledger accepted, oldest first
        self.refused: list[dict] = []  # edits the ledger refused: what another checkout may still hold
        self.ledger: Ledger | None = None
        self.files: list[LedgerFile] = []  # the ledger file as each accepted version left it
        self.deployed: dict[str, int] = {}  # region -> the version its stack runs now
        self.slot: dict[str, int] = {}  # region -> its slot (the ledger never lets it change)
        self.issued: dict[str, dict[int, str]] = {}  # key -> ticket -> the region that issued it
        self.handlers: dict[tuple[str, int], Region] = {}
        self.replaced = ReplacedKeys()  # an opaque counter beside the keys (no rule reconfigures it)
        self.aws = mock_aws()
        self.aws.start()
        self.scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"rollouts-{os.getpid()}-{id(self)}"
        self.scratch.mkdir(parents=True, exist_ok=True)

    def teardown(self) -> None:
        self.aws.stop()
        shutil.rmtree(self.scratch)

    # --- config histories, through the real ledger ------------------------------------------------

    @initialize(strict=st.booleans(), orders=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**32 - 1))
    def make_init(self, strict: bool, orders: dict, seed: int) -> None:
        """`make init`, then the first deploy to two regions; a third may be added later. The functions
        pick lanes from a generator seeded by the example, so a history replays exactly."""
        self.lane_picks = random.Random(seed)
        first = {"regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": REGION_SLOTS, "strictKeys": strict}
        first["counters"] = {"orders": dict(orders), "codes": CODES}
        self.record(first, None)
        for region, slot in first["regions"].items():
            self.deployed[region], self.slot[region] = 0, slot

    def record(self, raw: dict, previous: LedgerFile | None) -> None:
        """Synthesis: the real ledger checks and records `raw`, or raises (nothing recorded)."""
        config = parse_config(raw)
        file = record_services(previous, {config.table_name: config})
        self.files.append(file)
        self.ledger = file.services[config.table_name]
        self.versions.append(raw)

    def propose(self, change) -> None:
        raw = json.loads(json.dumps(self.versions[-1]))
        change(raw)
        try:
            self.record(raw, self.files[-1])
        except (ConfigError, LedgerError):
            self.refused.append(raw)  # refused: nothing recorded, nothing to deploy
            return

    @rule(key=st.sampled_from(KEYS), layout=st.sampled_from(LAYOUTS))
    def configure_counter(self, key: str, layout: dict) -> None:
        """A new counter, or a recorded one given another layout (which the ledger must refuse)."""
        self.propose(lambda raw: raw["counters"].update({key: dict(layout)}))

    @rule(key=st.sampled_from(KEYS), maximum=st.sampled_from(MAXES))
    def change_max(self, key: str, maximum: int | None) -> None:
        def change(raw: dict) -> None:
            if key in raw["counters"]:
                raw["counters"][key].pop("max", None)
                if maximum is not None:
                    raw["counters"][key]["max"] = maximum

        self.propose(change)

    @rule(key=st.sampled_from(KEYS))
    def remove_counter(self, key: str) -> None:
        self.propose(lambda raw: raw["counters"].pop(key, None))

    @rule(strict=st.booleans())
    def set_strict_keys(self, strict: bool) -> None:
        self.propose(lambda raw: raw.update(strictKeys=strict))

    @rule(key=st.sampled_from(KEYS))
    def set_default_key(self, key: str) -> None:
        self.propose(lambda raw: raw.update(defaultKey=key))

    @rule(region=st.sampled_from(REGIONS), slot=st.integers(0, REGION_SLOTS - 1))
    def place_region(self, region: str, slot: int) -> None:
        """A new region, or a region moved to another slot, maybe a retired one's."""
        self.propose(lambda raw: raw["regions"].update({region: slot}))

    @rule(region=st.sampled_from(REGIONS))
    def remove_region(self, region: str) -> None:
        self.propose(lambda raw: raw["regions"].pop(region, None))

    @rule(slots=st.integers(1, REGION_SLOTS + 1))
    def change_region_slots(self, slots: int) -> None:
        self.propose(lambda raw: raw.update(regionSlots=slots))

    # --- rollouts ---------------------------------------------------------------------------------

    @rule(data=st.data())
    def deploy(self, data: st.DataObject) -> None:
        """One region's stack moves to any accepted version that has it: an update, a rollback, or a
        region that stays behind while others move on."""
        region = data.draw(st.sampled_from([r for r in REGIONS if any(r in v["regions"] for v in self.versions)]))
        version = data.draw(st.sampled_from([i for i, v in enumerate(self.versions) if region in v["regions"]]))
        self.deployed[region] = version
        self.slot[region] = self.versions[version]["regions"][region]

    def handler(self, region: str) -> Region:
        version = self.deployed[region]
        if (region, version) not in self.handlers:
            self.handlers[region, version] = Region(self.versions[version], region)
            self.handlers[region, version].pick_lanes(self.lane_picks.shuffle)
            self.replaced.give(self.handlers[region, version], region)
        return self.handlers[region, version]

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        route=st.sampled_from(["ticket", "list", "block"]),
        count=st.one_of(st.integers(1, 12), st.integers(100, 1000)),  # large enough to reach other starts
    )
    def issue(self, data: st.DataObject, key: str, route: str, count: int) -> None:
        region = data.draw(st.sampled_from(sorted(self.deployed)))
        handler = self.handler(region)
        path = f"/_blocks/{key}" if route == "block" else f"/{key}"
        answer = handler.get(path, query={"count": count if route != "ticket" else 1})
        if answer.status != 200:
            # Not served (strictKeys) or past max; never config_mismatch: a key stuck on the wrong layout
            # is what the rollout rule prevents.
            assert (answer.status, answer.body["error"]) in ((404, "not_found"), (409, "exhausted")), answer
            return
        if route == "block":
            tickets = list(range(answer.body["first"], answer.body["last"] + 1, answer.body["step"]))
        else:
            tickets = answer.body.get("tickets", [answer.body["ticket"]])
        for ticket in tickets:
            seen = self.issued.setdefault(key, {})
            assert ticket not in seen, f"{key} {ticket} issued twice: by {seen[ticket]} and by {region}"
            seen[ticket] = region

    @rule(data=st.data(), key=st.sampled_from(KEYS), above=st.integers(0, 2500))
    def raise_key(self, data: st.DataObject, key: str, above: int) -> None:
        """`python -m tickets_admin raise`, run against one region from a checkout of the version it runs
        now (its cdk.json and the ledger beside it, which tickets_admin checks it against)."""
        region = data.draw(st.sampled_from(sorted(self.deployed)))
        version = self.deployed[region]
        checkout = self.scratch / f"v{version}"
        checkout.mkdir(exist_ok=True)
        cdk_json = checkout / "cdk.json"
        cdk_json.write_text(json.dumps({"context": {"tickets": self.versions[version]}}))
        write_ledger_file(checkout / "tickets.lock.json", self.files[version])
        argv = ["raise", key, "--above", str(above), "--config", str(cdk_json), "--region", region]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            tickets_admin([*argv, "--table", COUNTER_TABLE])  # a refusal (exit 1) writes nothing

    @rule(data=st.data(), ledger=st.sampled_from(["none", "older", "newest"]), key=st.sampled_from(KEYS))
    def serve_from_another_checkout(self, data: st.DataObject, ledger: str, key: str) -> None:
        """A local server on a region's table (an endpoint), started from another checkout: any accepted version's
        cdk.json or a refused edit, beside no ledger, an older one or the newest. It serves only if its checks at
        start let it (with no ledger, never: --without-ledger is an operator's word), and what it then issues
        keeps every invariant."""
        raw = data.draw(st.sampled_from(self.versions + self.refused))
        region = data.draw(st.sampled_from(sorted(self.deployed)))
        try:
            config = parse_config(raw)
            file = {"none": None, "older": data.draw(st.sampled_from(self.files)), "newest": self.files[-1]}[ledger]
            layout = ServedLayout(LocalDeployment(config, region), None, file, without_ledger=False)
            layout.require(persistent=True)
            server = Region(raw, region)
            check_table(list(scan(server.client, COUNTER_TABLE)), layout.deployment.config, layout.ledger)
        except (ConfigError, KeyError):  # refused at start (KeyError: the checkout's cdk.json lacks the region)
            return
        server.settings = region_settings(layout.deployment.config, region)
        server.pick_lanes(self.lane_picks.shuffle)
        self.take(server, region, key, data.draw(st.integers(1, 50)))

    @rule(data=st.data(), seed=st.integers(0, 2**32 - 1))
    def replace_a_key(self, data: st.DataObject, seed: int) -> None:
        region = data.draw(st.sampled_from(sorted(self.deployed)))
        self.replaced.replace(region, seed)
        self.handlers = {(r, v): handler for (r, v), handler in self.handlers.items() if r != region}

    @rule(data=st.data(), count=st.integers(1, 20))
    def issue_ids(self, data: st.DataObject, count: int) -> None:
        region = data.draw(st.sampled_from(sorted(self.deployed)))
        self.replaced.take(self.handler(region), region, count)

    def take(self, server: Region, region: str, key: str, count: int) -> None:
        answer = server.get(f"/{key}", query={"count": count})
        if answer.status == 200:
            for ticket in answer.body.get("tickets", [answer.body.get("ticket")]):
                seen = self.issued.setdefault(key, {})
                assert ticket not in seen, f"{key} {ticket} issued twice: by {seen[ticket]} and another checkout"
                seen[ticket] = region

    # --- what must hold after every step -----------------------------------------------------------

    @invariant()
    def every_ticket_is_on_its_keys_recorded_lane(self) -> None:
        if self.ledger is None:
            return
        for key, tickets in self.issued.items():
            layout: CounterRecord = self.ledger.counters.get(key, UNCONFIGURED)
            lanes = REGION_SLOTS * layout.shards
            for ticket, region in tickets.items():
                offset = ticket - layout.start
                assert offset >= 0 and offset % layout.stride == 0, f"{key} {ticket} is off {layout}"
                lane = offset // layout.stride % lanes
                assert lane // layout.shards == self.slot[region], (
                    f"{key} {ticket} from {region} (slot {self.slot[region]}) is on lane {lane} of {layout}"
                )


Rollouts.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_no_rollout_repeats_a_ticket = Rollouts.TestCase
