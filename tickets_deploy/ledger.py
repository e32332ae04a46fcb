"""The deployment ledger, tickets.lock.json: every setting that decides which numbers a lane owns, as
ever synthesised, so that no rollout of accepted configs can hand out a number twice
(docs/design.md#the-rollout-rule).

A fresh table cannot know what another region, an earlier slot owner or a deleted stack issued, and
the CDK cannot ask AWS at synthesis; the ledger, committed beside cdk.json, remembers it instead.
Rollouts are not atomic: regions update one at a time, a failed stack rolls back, a region may stay on
any earlier version. So the ledger also remembers which keys any recorded version served with the
layout of an unconfigured key, and a newly configured counter among them must keep that layout.

`record` compares a parsed config with the previous ledger and returns the next one, or refuses with
a LedgerError that names each field, its old and new value, why it would repeat tickets and what to
do instead. Plain Python (no aws_cdk), so it is tested without synthesising anything; reading and
writing the file are the thin functions at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tickets.series.config import SeriesConfigError, parse_series
from tickets.settings import MAX_SAFE_INTEGER, CounterConfig
from tickets_deploy import epochs
from tickets_deploy.config import MAX_TICKET, DeploymentConfig, exact_integer

LEDGER_FILE = "tickets.lock.json"
COMMENT = (
    "Tickets deployment ledger, kept by cdk synth: per counter table, the region slots, counter settings and "
    "accounts ever deployed, and which keys were ever served unconfigured; and its versions, one line, each "
    "naming its parent, which deployed stacks record so that no rollout can repeat a ticket. Commit it with "
    "cdk.json; never edit, merge or delete it (docs/operations.md)."
)
INIT_COMMAND = "make init"
# The stack output naming the ledger version a stack was synthesised with (tickets_deploy/predeploy.py).
LEDGER_VERSION_OUTPUT = "TicketsLedgerVersion"
_SLOT_KEY = re.compile(r"0|[1-9][0-9]{0,3}")
_ACCOUNT = re.compile(r"[0-9]{12}")


class LedgerError(ValueError):
    """A config the ledger refuses, or a ledger file that cannot be read; the message says what to do."""


@dataclass(frozen=True)
class SlotRecord:
    region: str
    retired: bool = False  # the region was removed: its retained table holds this slot's tickets
    accounts: tuple[str, ...] = ()  # every AWS account this region was synthesised for, sorted


@dataclass(frozen=True)
class CounterRecord:
    start: int
    stride: int
    shards: int

    @classmethod
    def of(cls, counter: CounterConfig) -> CounterRecord:
        return cls(start=counter.start, stride=counter.stride, shards=counter.shards)

    def describe(self) -> str:
        return f"start {self.start}, stride {self.stride}, shards {self.shards}"


# The layout the handler gives a key that cdk.json does not configure (docs/design.md#the-rollout-rule).
UNCONFIGURED = CounterRecord.of(CounterConfig())


@dataclass(frozen=True)
class Ledger:
    region_slots: int
    table_name: str
    slots: Mapping[int, SlotRecord] = field(default_factory=dict)
    counters: Mapping[str, CounterRecord] = field(default_factory=dict)
    # Whether any recorded version served keys nobody configured (strictKeys false), and which default
    # keys a recorded version served unconfigured (the default key is served even with strictKeys).
    # A version may run in some region long after a newer one was recorded, so both only ever grow.
    unconfigured_keys_served: bool = True
    default_keys_served: frozenset[str] = frozenset()
    # Every series ever deployed, with all its fields as cdk.json writes them (SeriesConfig.to_json): a
    # series is permanent, field by field, and never removed (docs/series.md).
    series: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Every layout change, oldest first: per key, the fence its old lanes stopped at and both layouts
    # (`python -m tickets_admin fence` records them; docs/design.md#epochs-and-fences).
    epochs: tuple[epochs.KeyEpoch, ...] = ()

    def served_unconfigured(self, key: str) -> bool:
        """Could a recorded version have issued `key`'s tickets with the unconfigured layout?"""
        return self.unconfigured_keys_served or key in self.default_keys_served


def record(config: DeploymentConfig, previous: Ledger | None, account: str | None = None) -> Ledger:
    """The ledger after deploying `config` (to `account`, when known); LedgerError listing every change
    that could repeat a ticket. `previous` None starts a deployment (`make init`): all is recorded as it
    stands."""
    if previous is None:
        previous = Ledger(config.region_slots, config.table_name, unconfigured_keys_served=False)
    else:
        problems = [
            *_table_problems(config, previous),
            *epochs.synthesis_problems(config, previous),
            *_slot_problems(config, previous),
            *_counter_problems(config, previous),
            *_series_problems(config, previous),
        ]
        if problems:
            raise LedgerError("\n".join(problems))

    slots = {slot: replace(entry, retired=True) for slot, entry in previous.slots.items()}
    for region, slot in config.regions.items():
        accounts = set(slots[slot].accounts) if slot in slots else set()
        if account is not None:
            accounts.add(account)
        slots[slot] = SlotRecord(region, accounts=tuple(sorted(accounts)))
    counters = {**previous.counters, **{key: CounterRecord.of(c) for key, c in config.counters.items()}}
    default_keys = set(previous.default_keys_served)
    if config.default_key not in config.counters:
        default_keys.add(config.default_key)
    series = {**previous.series, **{key: s.to_json() for key, s in config.series.items()}}
    return Ledger(
        config.region_slots,  # as recorded, or grown above fences (epochs.synthesis_problems)
        previous.table_name,
        dict(sorted(slots.items())),
        dict(sorted(counters.items())),
        unconfigured_keys_served=previous.unconfigured_keys_served or not config.strict_keys,
        default_keys_served=frozenset(default_keys),
        series=dict(sorted(series.items())),
        epochs=previous.epochs,
    )


def _series_problems(config: DeploymentConfig, previous: Ledger) -> list[str]:
    """A recorded series must stay in cdk.json with every field as recorded: its journal and its numbers
    were made with them (another start, period or format would repeat or reshape numbers already issued)."""
    problems = []
    for key, recorded in previous.series.items():
        where = f"series.{key}"
        series = config.series.get(key)
        if series is None:
            problems.append(
                f"{where}: the ledger records the series {key} ({_fields_text(recorded)}), cdk.json no longer "
                f"configures it. A series is never removed: its journal must stay reachable and its numbers are "
                f"never issued again under another setting. Keep {key} in cdk.json as recorded (it may stay unused)."
            )
            continue
        now = series.to_json()
        for name in sorted(set(recorded) | set(now)):
            if recorded.get(name) != now.get(name):
                problems.append(
                    f"{where}.{name}: the ledger records {recorded.get(name)!r}, cdk.json says {now.get(name)!r}. "
                    "Every field of a series is permanent: its numbers and ids were issued under the recorded "
                    f"ones. Keep {key} as recorded; for another numbering, add a series under a new name."
                )
    return problems


def _fields_text(fields: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {value!r}" for name, value in sorted(fields.items()))


def _table_problems(config: DeploymentConfig, previous: Ledger) -> list[str]:
    problems = []
    if config.table_name != previous.table_name:
        problems.append(
            f"tableName: the ledger records {previous.table_name!r}, cdk.json says {config.table_name!r}. A new "
            "name is a new, empty table, where every counter would start again at its start and repeat every "
            f"ticket already issued. Keep {previous.table_name!r} (docs/operations.md)."
        )
    # regionSlots: it grows only above fences, per key (epochs.synthesis_problems).
    return problems


def _slot_problems(config: DeploymentConfig, previous: Ledger) -> list[str]:
    recorded_slot = {entry.region: slot for slot, entry in previous.slots.items()}
    free = [
        str(slot)
        for slot in range(previous.region_slots)
        if slot not in previous.slots and slot not in config.regions.values()
    ]
    instead = f"never-used slots: {', '.join(free)}" if free else "no slot was never used"
    problems = []
    for region, slot in config.regions.items():
        where = f"regions.{region}"
        if region in recorded_slot and recorded_slot[region] != slot:
            problems.append(
                f"{where}: the ledger gives {region} slot {recorded_slot[region]}, cdk.json gives slot {slot}. "
                f"{region}'s table holds the lanes of slot {recorded_slot[region]}: on slot {slot} its new lanes "
                f"would issue numbers that belong to slot {slot}, and slot {recorded_slot[region]}'s numbers "
                f"would be left for another region to issue again. Keep {region} on slot {recorded_slot[region]}."
            )
            continue
        owner = previous.slots.get(slot)
        if owner is not None and owner.region != region:
            retired = " (retired)" if owner.retired else ""
            problems.append(
                f"{where}: the ledger gives slot {slot} to {owner.region}{retired}, cdk.json gives it to {region}. "
                f"{owner.region}'s table, retained, holds the tickets issued on slot {slot}; {region} would "
                f"start with an empty table and issue the same numbers again. Give {region} a slot never used "
                f"({instead})."
            )
    return problems


def _counter_problems(config: DeploymentConfig, previous: Ledger) -> list[str]:
    why = {
        "start": "every lane's first ticket moves with start, so new lanes would overlap the numbers old "
        "lanes issued. To skip ahead, keep start and run `python -m tickets_admin raise {key} "
        "--above N` in each region",
        "stride": "lanes interleave by stride; with another stride new lanes would overlap the numbers old "
        "lanes issued",
        "shards": "a key's lanes are laid out over its shards (step = stride x regionSlots x shards), so new "
        "lanes would reissue numbers the old ones issued",
    }
    problems = []
    for key, recorded in previous.counters.items():
        where = f"counters.{key}"
        counter = config.counters.get(key)
        if counter is None:
            problems.append(
                f"{where}: the ledger records {key} ({recorded.describe()}), cdk.json no longer configures it. "
                f"It would be served with the unconfigured layout ({UNCONFIGURED.describe()}), or, reconfigured "
                f"later, with settings the ledger could no longer check, repeating its tickets. Keep {key} in "
                "cdk.json as recorded (it may stay unused)."
            )
            continue
        for name in ("start", "stride", "shards"):
            old, new = getattr(recorded, name), getattr(counter, name)
            if old != new and not epochs.covered(config, previous, key):
                problems.append(
                    f"{where}.{name}: the ledger records {old}, cdk.json says {new}. "
                    f"{why[name].format(key=key)}; for a different numbering, add a new counter key"
                    + (
                        "."
                        if name == "start"
                        else f", or change it above a fence: `{epochs.FENCE_COMMAND}` "
                        "(docs/operations.md#changing-a-layout)."
                    )
                )
    for key, counter in config.counters.items():
        layout = CounterRecord.of(counter)
        if key in previous.counters or layout == UNCONFIGURED or not previous.served_unconfigured(key):
            continue
        if epochs.covered(config, previous, key):
            continue  # its unconfigured lanes were stopped at a fence
        if key in previous.default_keys_served and not previous.unconfigured_keys_served:
            served = f"{key} was the defaultKey of a recorded version that did not configure it"
        else:
            served = "a recorded version served keys nobody configured (strictKeys false)"
        problems.append(
            f"counters.{key}: a new counter with {layout.describe()}, but {served}, with the unconfigured layout "
            f"({UNCONFIGURED.describe()}). Regions update one at a time and a failed stack rolls back, so a "
            f"region still on that version can issue {key} with the unconfigured layout while another issues it "
            f"with the new one: the two sets of lanes overlap and repeat tickets, and the tickets already issued "
            f"would make {key} refuse the new layout for good. Configure {key} with start, stride and shards as "
            "unconfigured keys have them (max and maxBlock may differ); to begin above N, run `python -m "
            f"tickets_admin raise {key} --above N` in each region once the config is deployed. Another layout "
            "is possible only for keys no version ever served unconfigured: strictKeys true from `make init` "
            "on, with keys other than the defaultKey (docs/design.md#the-rollout-rule)."
        )
    return problems


# --- versions: the ledger's history, one line -----------------------------------------------------


@dataclass(frozen=True)
class Version:
    """One recorded state of the file: `id` hashes `parent` and the services as recorded (version_id)."""

    id: str
    parent: str | None
    change: str  # what the change recorded, for the reader of the file and of a refusal


@dataclass(frozen=True)
class LedgerFile:
    """tickets.lock.json: every service's ledger, by table name, and the versions that led to it, oldest
    first. Deployed stacks record the version they were synthesised with (TicketsLedgerVersion), and a
    deploy is refused unless each region's deployed version is an ancestor of it (tickets_deploy.predeploy)."""

    services: Mapping[str, Ledger]
    versions: tuple[Version, ...]

    @property
    def version(self) -> str | None:
        """The id of the state the file holds (its last version)."""
        return self.versions[-1].id if self.versions else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Is `older` `newer` itself or a version before it in this file's history?"""
        ids = [version.id for version in self.versions]
        return older in ids and newer in ids and ids.index(older) <= ids.index(newer)


VERSION_DIGITS = 16


def version_id(parent: str | None, services: Mapping[str, Ledger]) -> str:
    """The first 16 hex digits of sha256 over the canonical JSON of the parent and the services; the
    parent is part of it, so a state reached again later is a new version."""
    canonical = json.dumps(
        {"parent": parent, "services": {name: _service_fields(s) for name, s in sorted(services.items())}},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:VERSION_DIGITS]


def record_services(
    previous: LedgerFile | None,
    configs: Mapping[str, DeploymentConfig],
    account: str | None = None,
    change: str | None = None,
) -> LedgerFile:
    """The ledger file after deploying every service of `configs` (by table name) to `account`; each is
    checked against its own recorded ledger with `record`, so the rollout rule holds per service. Services
    the app no longer declares are kept as recorded. Returns `previous` itself when nothing changed, else
    a file with one more version (`change` describes it; by default a summary of what was recorded).
    LedgerError lists every problem, each prefixed by its service's table name."""
    recorded: Mapping[str, Ledger] = previous.services if previous is not None else {}
    services = dict(recorded)
    problems: list[str] = []
    for name, config in sorted(configs.items()):
        if config.table_name != name:
            raise ValueError(f"configs: {name!r} names a config whose tableName is {config.table_name!r}")
        try:
            services[name] = record(config, recorded.get(name), account)
        except LedgerError as err:
            problems.extend(f"{name}: {line}" for line in str(err).splitlines())
            continue
        if name not in recorded:
            problems.extend(f"{name}: {line}" for line in _renamed_table_problems(config, recorded, configs))
    if problems:
        raise LedgerError("\n".join(problems))
    services = dict(sorted(services.items()))
    if previous is not None and services == dict(previous.services):
        return previous
    parent = previous.version if previous is not None else None
    versions = previous.versions if previous is not None else ()
    described = change if change is not None else describe_change(recorded, services)
    return LedgerFile(services, (*versions, Version(version_id(parent, services), parent, described)))


def _renamed_table_problems(
    config: DeploymentConfig, recorded: Mapping[str, Ledger], configs: Mapping[str, DeploymentConfig]
) -> list[str]:
    """A service new to the ledger where a recorded one the app no longer declares served the same
    region: most likely tableName changed, and a new table restarts every counter."""
    problems = []
    for name, ledger in recorded.items():
        if name in configs:
            continue
        shared = sorted({entry.region for entry in ledger.slots.values()} & set(config.regions))
        if shared:
            problems.append(
                f"tableName: the ledger records {name!r} in {', '.join(shared)}, which cdk.json no longer "
                f"declares, and cdk.json says {config.table_name!r}. A new name is a new, empty table, where every "
                f"counter would start again at its start and repeat every ticket already issued. Keep {name!r} "
                "(docs/operations.md)."
            )
    return problems


def describe_change(previous: Mapping[str, Ledger], services: Mapping[str, Ledger]) -> str:
    """What a new version recorded, in a line: e.g. `tickets-counters: counters foo added`."""
    parts = []
    for name, ledger in services.items():
        old = previous.get(name)
        if old is None:
            parts.append(f"{name}: recorded")
            continue
        if old == ledger:
            continue
        said = []
        added = [key for key in ledger.counters if key not in old.counters]
        if added:
            said.append(f"counters {', '.join(added)} added")
        added_series = [key for key in ledger.series if key not in old.series]
        if added_series:
            said.append(f"series {', '.join(added_series)} added")
        for slot, entry in ledger.slots.items():
            before = old.slots.get(slot)
            if before is None or before.retired and not entry.retired:
                said.append(f"{entry.region} on slot {slot}")
            elif entry.retired and not before.retired:
                said.append(f"{entry.region} retired from slot {slot}")
            elif entry.accounts != before.accounts:
                said.append(f"{entry.region} account {', '.join(sorted(set(entry.accounts) - set(before.accounts)))}")
        if ledger.unconfigured_keys_served and not old.unconfigured_keys_served:
            said.append("unconfigured keys served (strictKeys false)")
        served = sorted(ledger.default_keys_served - old.default_keys_served)
        if served:
            said.append(f"default key {', '.join(served)} served unconfigured")
        parts.append(f"{name}: {'; '.join(said)}")
    return "; ".join(parts) or "no change"


def check_lineage(ledger: LedgerFile, where: str) -> None:
    """LedgerError unless the history is a single line whose last version is the recorded services: two
    children of one parent (a merge kept both branches' versions) or services that do not hash to the
    last version (a hand edit, or git merging two branches' ledgers line by line) mean that two changes
    were each checked alone but never one after the other."""
    way_out = (
        "Re-record one change on top of the other: restore one side's ledger (`git checkout --ours -- "
        f"{LEDGER_FILE}`, or --theirs), keep the merged cdk.json and synthesise again, so the other side's "
        "change is checked after it; if the ledger refuses it, that change could repeat tickets "
        "(docs/operations.md#working-as-a-team)."
    )
    if not ledger.versions:
        raise LedgerError(f"{where}: versions: empty; restore the ledger from version control")
    first = ledger.versions[0]
    if first.parent is not None:
        raise LedgerError(
            f"{where}: versions: the first version {first.id} names a parent ({first.parent}): its history was "
            f"cut. Restore the ledger from version control (git log -- {LEDGER_FILE})."
        )
    seen: dict[str, Version] = {}
    for before, version in zip(ledger.versions, ledger.versions[1:], strict=False):
        seen[before.id] = before
        if version.parent == before.id:
            continue
        if version.parent in seen:
            sibling = ledger.versions[[v.id for v in ledger.versions].index(version.parent) + 1]
            raise LedgerError(
                f"{where}: versions: {sibling.id} ({sibling.change}) and {version.id} ({version.change}) are two "
                f"children of {version.parent}: two branches recorded a change each and a merge kept both, so "
                f"neither was checked after the other. {way_out}"
            )
        raise LedgerError(
            f"{where}: versions: {version.id} names parent {version.parent}, not the version before it "
            f"({before.id}): the history is not a single line. {way_out}"
        )
    last = ledger.versions[-1]
    actual = version_id(last.parent, ledger.services)
    if actual != last.id:
        raise LedgerError(
            f"{where}: its services hash to {actual}, not to its last version {last.id} ({last.change}): the "
            "file was edited by hand or merged line by line from two branches' ledgers, and the merged "
            f"services were never checked as one change after the other. {way_out}"
        )


# --- the file -----------------------------------------------------------------------------------


def ledger_path_beside(config_file: Path) -> Path:
    """Beside cdk.json (and app.py), wherever the command that reads it runs from."""
    return config_file.resolve().parent / LEDGER_FILE


def read_ledger_file(path: Path) -> LedgerFile:
    """The ledger file at `path`, its lineage checked (check_lineage); a LedgerError naming `make init` if
    there is none, for a missing ledger is a deleted one as often as a new deployment, and treating it as
    new would start every counter again."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LedgerError(
            f"{path}: no ledger. If this app was deployed before, restore its ledger from version control, "
            f"never write a new one (a new ledger forgets what was issued): `git checkout -- {path.name}`, or, "
            f"if a commit deleted it (an upgrade from a version that shipped an example ledger), `git show "
            f"$(git rev-list -n 1 HEAD -- {path.name})^:{path.name} > {path.name}` (docs/operations.md"
            f"#upgrading-from-a-version-that-shipped-a-ledger). Only for a new deployment: `{INIT_COMMAND}` writes "
            "one for the current cdk.json; commit it."
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise LedgerError(f"{path}: cannot read it ({err})") from None
    try:
        ledger = from_text(text)
    except (ValueError, TypeError, KeyError) as err:
        if "<<<<<<<" in text:
            raise LedgerError(
                f"{path}: not a Tickets ledger (it holds git conflict markers). A ledger is never merged line by "
                f"line: {_MERGE_WAY_OUT}"
            ) from None
        raise LedgerError(
            f"{path}: not a Tickets ledger ({err}); restore it from version control (git checkout -- {path.name})"
        ) from None
    check_lineage(ledger, str(path))
    return ledger


_MERGE_WAY_OUT = (
    f"take one side's ledger (`git checkout --ours -- {LEDGER_FILE}` or --theirs), keep the merged cdk.json and "
    "synthesise again, so the other side's change is checked after it (docs/operations.md#working-as-a-team)"
)


def refusal(ledger_path: Path, err: LedgerError, nothing: str) -> str:
    """How synthesis and tickets_admin say that the ledger refuses cdk.json (`nothing` was done)."""
    return f"cdk.json: refused by the deployment ledger {ledger_path} (nothing was {nothing}):\n{err}"


def check_config_file(config_file: Path, config: DeploymentConfig) -> LedgerFile:
    """The ledger beside `config_file`, which must accept `config` as synthesis would: a command that
    writes lanes with a config's layouts (tickets_admin raise, migrate) refuses one the ledger refuses,
    with synthesis's message. LedgerError (from refusal) otherwise."""
    path = ledger_path_beside(config_file)
    try:
        ledger = read_ledger_file(path)
        record_services(ledger, {config.table_name: config})
    except LedgerError as err:
        raise LedgerError(refusal(path, err, "written")) from None
    return ledger


def read_ledger(path: Path) -> Ledger:
    """The one service's ledger of a file that records exactly one (today's app: one table name)."""
    services = read_ledger_file(path).services
    if len(services) != 1:
        raise LedgerError(f"{path}: records {len(services)} services ({', '.join(services)}), not one")
    return next(iter(services.values()))


def init_ledger_file(path: Path, configs: Mapping[str, DeploymentConfig]) -> LedgerFile:
    """Write the first ledger for `configs` (by table name); LedgerError if one exists (never replaced)."""
    if path.exists():
        raise LedgerError(
            f"{path}: a ledger exists already; it is never replaced (a new one would forget what was issued). "
            "Synthesis checks cdk.json against it."
        )
    ledger = record_services(None, configs, None, INIT_COMMAND)  # no account yet: the first synthesis records it
    write_ledger_file(path, ledger)
    return ledger


def init_ledger(path: Path, config: DeploymentConfig) -> Ledger:
    """init_ledger_file for one service; returns its ledger."""
    return init_ledger_file(path, {config.table_name: config}).services[config.table_name]


def write_ledger_file(path: Path, ledger: LedgerFile) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(to_text(ledger), encoding="utf-8")
    os.replace(temporary, path)  # a ledger is never left half written


def new_accounts(previous: Ledger | LedgerFile | None, ledger: Ledger | LedgerFile) -> list[tuple[str, str]]:
    """(region, account) pairs that `ledger` records and `previous` did not: tables that start empty.
    Per service (Ledger) or across the services of a file (LedgerFile)."""
    if isinstance(ledger, LedgerFile):
        before = previous.services if isinstance(previous, LedgerFile) else {}
        return [pair for name, service in ledger.services.items() for pair in new_accounts(before.get(name), service)]
    old_slots = previous.slots if isinstance(previous, Ledger) else {}
    return [
        (entry.region, account)
        for slot, entry in ledger.slots.items()
        for account in entry.accounts
        if slot not in old_slots or account not in old_slots[slot].accounts
    ]


def _service_fields(ledger: Ledger) -> dict[str, Any]:
    """One service as the file writes it (and as its version id hashes it)."""
    return {
        "counters": {
            key: {"shards": c.shards, "start": _exact(c.start), "stride": _exact(c.stride)}
            for key, c in sorted(ledger.counters.items())
        },
        "defaultKeysServed": sorted(ledger.default_keys_served),
        "regionSlots": ledger.region_slots,
        "slots": {
            str(slot): {
                **({"accounts": list(s.accounts)} if s.accounts else {}),
                "region": s.region,
                **({"retired": True} if s.retired else {}),
            }
            for slot, s in sorted(ledger.slots.items())
        },
        "unconfiguredKeysServed": ledger.unconfigured_keys_served,
        # Only where a series was ever recorded: the services of older ledgers hash as they always did.
        **({"series": {key: dict(fields) for key, fields in sorted(ledger.series.items())}} if ledger.series else {}),
        # Only where a layout ever changed, likewise.
        **({"epochs": _epochs_fields(ledger)} if ledger.epochs else {}),
    }


def _epochs_fields(ledger: Ledger) -> dict[str, list[dict[str, Any]]]:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for epoch in ledger.epochs:
        by_key.setdefault(epoch.key, []).append(epoch.to_json())
    return dict(sorted(by_key.items()))


def to_text(ledger: LedgerFile) -> str:
    """Sorted, two-space indented, one counter, slot or version per line, so a change is a small diff."""

    def block(name: str, rows: Mapping[str, Any], indent: str) -> str:
        if not rows:
            return f'{indent}"{name}": {{}}'
        lines = [f"{indent}  {json.dumps(key)}: {json.dumps(value, sort_keys=True)}" for key, value in rows.items()]
        return f'{indent}"{name}": {{\n' + ",\n".join(lines) + f"\n{indent}}}"

    def service(name: str, ledger: Ledger) -> str:
        fields = _service_fields(ledger)
        inner = "      "
        return (
            f"    {json.dumps(name)}: {{\n"
            + ",\n".join(
                [
                    block("counters", fields["counters"], inner),
                    f'{inner}"defaultKeysServed": {json.dumps(fields["defaultKeysServed"])}',
                    *([block("epochs", fields["epochs"], inner)] if "epochs" in fields else []),
                    f'{inner}"regionSlots": {fields["regionSlots"]}',
                    *([block("series", fields["series"], inner)] if "series" in fields else []),
                    block("slots", fields["slots"], inner),
                    f'{inner}"unconfiguredKeysServed": {json.dumps(fields["unconfiguredKeysServed"])}',
                ]
            )
            + "\n    }"
        )

    services = ",\n".join(service(name, s) for name, s in sorted(ledger.services.items()))
    versions = ",\n".join(
        f"    {json.dumps({'id': v.id, 'parent': v.parent, 'change': v.change})}" for v in ledger.versions
    )
    return (
        "{\n"
        f'  "//": {json.dumps(COMMENT)},\n'
        + (f'  "services": {{\n{services}\n  }},\n' if services else '  "services": {},\n')
        + f'  "versions": [\n{versions}\n  ]\n'
        + "}\n"
    )


def from_text(text: str) -> LedgerFile:
    """A ledger file from its text, lineage not checked (check_lineage). A format-1 ledger (one service:
    top-level tableName, regionSlots, slots, counters) is read as that service with one root version."""
    raw = json.loads(text)
    if isinstance(raw, dict) and "tableName" in raw:
        service = _service_from(raw, "the ledger", format_1=True)
        services = {service.table_name: service}
        return LedgerFile(services, (Version(version_id(None, services), None, FORMAT_1_CHANGE),))
    _fields(raw, "the ledger", required={"services", "versions"}, optional={"//"})
    services = {
        name: _service_from({**_object(entry, f"services.{name}"), "tableName": name}, f"services.{name}")
        for name, entry in sorted(_object(raw["services"], "services").items())
    }
    if not isinstance(raw["versions"], list):
        raise ValueError("versions: not a list")
    versions = []
    for index, entry in enumerate(raw["versions"]):
        _fields(entry, f"versions[{index}]", required={"id", "parent", "change"}, optional=set())
        if not isinstance(entry["id"], str) or not _VERSION.fullmatch(entry["id"]):
            raise ValueError(f"versions[{index}].id: not {VERSION_DIGITS} hex digits")
        if entry["parent"] is not None and not (
            isinstance(entry["parent"], str) and _VERSION.fullmatch(entry["parent"])
        ):
            raise ValueError(f"versions[{index}].parent: not null or {VERSION_DIGITS} hex digits")
        if not isinstance(entry["change"], str):
            raise ValueError(f"versions[{index}].change: not a string")
        versions.append(Version(entry["id"], entry["parent"], entry["change"]))
    return LedgerFile(services, tuple(versions))


FORMAT_1_CHANGE = "recorded before the ledger had versions (format 1)"
_VERSION = re.compile(f"[0-9a-f]{{{VERSION_DIGITS}}}")


def _service_from(raw: Any, where: str, *, format_1: bool = False) -> Ledger:
    """One service. A format-1 ledger written before the rollout rule lacks unconfiguredKeysServed and
    defaultKeysServed: it is read as if every key could have been served unconfigured, the safe side."""
    flags = {"unconfiguredKeysServed", "defaultKeysServed"}
    _fields(
        raw,
        where,
        required={"regionSlots", "tableName", "slots", "counters"} | (set() if format_1 else flags),
        optional=({"//"} | flags) if format_1 else {"series", "epochs"},
    )
    region_slots = _whole(raw["regionSlots"], "regionSlots", low=1)
    if not isinstance(raw["tableName"], str):
        raise ValueError("tableName: not a string")
    slots = {}
    for name, entry in _object(raw["slots"], "slots").items():
        if not _SLOT_KEY.fullmatch(name) or int(name) >= region_slots:
            raise ValueError(f"slots.{name}: not a slot below regionSlots ({region_slots})")
        _fields(entry, f"slots.{name}", required={"region"}, optional={"retired", "accounts"})
        if not isinstance(entry["region"], str) or entry.get("retired", True) is not True:
            raise ValueError(f"slots.{name}: region must be a name and retired, if present, true")
        accounts = entry.get("accounts", [])
        if not isinstance(accounts, list) or not all(isinstance(a, str) and _ACCOUNT.fullmatch(a) for a in accounts):
            raise ValueError(f"slots.{name}.accounts: must be a list of 12-digit account ids")
        slots[int(name)] = SlotRecord(entry["region"], retired="retired" in entry, accounts=tuple(sorted(accounts)))
    counters = {}
    for key, entry in _object(raw["counters"], "counters").items():
        _fields(entry, f"counters.{key}", required={"start", "stride", "shards"}, optional=set())
        counters[key] = CounterRecord(
            start=_whole(entry["start"], f"counters.{key}.start", low=0),
            stride=_whole(entry["stride"], f"counters.{key}.stride", low=1),
            shards=_whole(entry["shards"], f"counters.{key}.shards", low=1),
        )
    series = {}
    for key, entry in _object(raw.get("series", {}), "series").items():
        try:  # recorded as the config wrote it: it must read back as a series, unchanged
            parsed = parse_series(key, entry, region_slots=region_slots, where=f"series.{key}")
        except SeriesConfigError as err:
            raise ValueError(str(err)) from None
        if parsed.to_json() != entry:
            raise ValueError(f"series.{key}: not as the config records a series ({_fields_text(parsed.to_json())})")
        series[key] = entry
    served = raw.get("unconfiguredKeysServed", True)
    if not isinstance(served, bool):
        raise ValueError("unconfiguredKeysServed: must be true or false")
    default_keys = raw.get("defaultKeysServed", [])
    if not isinstance(default_keys, list) or not all(isinstance(key, str) for key in default_keys):
        raise ValueError("defaultKeysServed: must be a list of keys")
    return Ledger(
        region_slots,
        raw["tableName"],
        dict(sorted(slots.items())),
        dict(sorted(counters.items())),
        unconfigured_keys_served=served,
        default_keys_served=frozenset(default_keys),
        series=dict(sorted(series.items())),
        epochs=_epochs_from(raw.get("epochs", {})),
    )


def _epochs_from(raw: Any) -> tuple[epochs.KeyEpoch, ...]:
    """The recorded epochs, per key oldest first (numbered 1, 2, ...), each fence at or above its old start."""
    found = []
    for key, entries in _object(raw, "epochs").items():
        if not isinstance(entries, list):
            raise ValueError(f"epochs.{key}: not a list")
        for index, entry in enumerate(entries):
            where = f"epochs.{key}[{index}]"
            _fields(entry, where, required={"epoch", "fence", "from", "to"}, optional=set())
            _whole(entry["epoch"], f"{where}.epoch", low=1)
            _whole(entry["fence"], f"{where}.fence", low=0)
            for side in ("from", "to"):
                _fields(
                    entry[side],
                    f"{where}.{side}",
                    required={"regionSlots", "shards", "start", "stride"},
                    optional=set(),
                )
                for name in ("regionSlots", "shards", "start", "stride"):
                    _whole(entry[side][name], f"{where}.{side}.{name}", low=0 if name == "start" else 1)
            epoch = epochs.KeyEpoch.from_json(key, entry)
            if epoch.number != index + 1 or epoch.fence < epoch.old.start:
                raise ValueError(f"{where}: not epoch {index + 1} with a fence at or above its old start")
            found.append(epoch)
    return tuple(found)


def _exact(value: int) -> int | str:
    """Like cdk.json: above 2^53-1 as a decimal string, which every JSON parser keeps exact."""
    return value if value <= MAX_SAFE_INTEGER else str(value)


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: not an object")
    return raw


def _fields(raw: Any, where: str, *, required: set[str], optional: set[str]) -> None:
    present = set(_object(raw, where))
    if required - present or present - required - optional:
        raise ValueError(
            f"{where}: expected the fields {', '.join(sorted(required | optional))}, "
            f"found {', '.join(sorted(present)) or 'none'}"
        )


def _whole(raw: Any, where: str, *, low: int) -> int:
    """The ledger writes numbers as cdk.json does (decimal strings above 2^53-1), so it reads them by the
    same rule."""
    return exact_integer(raw, low=low, high=MAX_TICKET, where=where)
