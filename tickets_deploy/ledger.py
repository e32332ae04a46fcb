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

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tickets.settings import MAX_SAFE_INTEGER, CounterConfig
from tickets_deploy.config import MAX_TICKET, DeploymentConfig, exact_integer

LEDGER_FILE = "tickets.lock.json"
COMMENT = (
    "Tickets deployment ledger, kept by cdk synth: the region slots, table name, counter settings and "
    "accounts ever deployed, and which keys were ever served unconfigured, so that no rollout can repeat "
    "a ticket. Commit it with cdk.json; never edit or delete it (docs/operations.md)."
)
INIT_COMMAND = "make init"
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
            *_slot_problems(config, previous),
            *_counter_problems(config, previous),
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
    return Ledger(
        previous.region_slots,
        previous.table_name,
        dict(sorted(slots.items())),
        dict(sorted(counters.items())),
        unconfigured_keys_served=previous.unconfigured_keys_served or not config.strict_keys,
        default_keys_served=frozenset(default_keys),
    )


def new_accounts(previous: Ledger, ledger: Ledger) -> list[tuple[str, str]]:
    """(region, account) pairs that `ledger` records and `previous` did not: tables that start empty."""
    return [
        (entry.region, account)
        for slot, entry in ledger.slots.items()
        for account in entry.accounts
        if slot not in previous.slots or account not in previous.slots[slot].accounts
    ]


def _table_problems(config: DeploymentConfig, previous: Ledger) -> list[str]:
    problems = []
    if config.table_name != previous.table_name:
        problems.append(
            f"tableName: the ledger records {previous.table_name!r}, cdk.json says {config.table_name!r}. A new "
            "name is a new, empty table, where every counter would start again at its start and repeat every "
            f"ticket already issued. Keep {previous.table_name!r} (docs/operations.md)."
        )
    if config.region_slots != previous.region_slots:
        problems.append(
            f"regionSlots: the ledger records {previous.region_slots}, cdk.json says {config.region_slots}. "
            "Every counter's lanes are laid out over regionSlots (step = stride x regionSlots x shards), so the "
            "new lanes would reissue numbers the old ones issued. Keep regionSlots at "
            f"{previous.region_slots}; add regions only on its free slots (docs/operations.md#adding-a-region)."
        )
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
            if old != new:
                problems.append(
                    f"{where}.{name}: the ledger records {old}, cdk.json says {new}. "
                    f"{why[name].format(key=key)}; for a different numbering, add a new counter key."
                )
    for key, counter in config.counters.items():
        layout = CounterRecord.of(counter)
        if key in previous.counters or layout == UNCONFIGURED or not previous.served_unconfigured(key):
            continue
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


# --- the file -----------------------------------------------------------------------------------


def ledger_path_beside(config_file: Path) -> Path:
    """Beside cdk.json (and app.py), wherever the command that reads it runs from."""
    return config_file.resolve().parent / LEDGER_FILE


def read_ledger(path: Path) -> Ledger:
    """The ledger at `path`; a LedgerError naming `make init` if there is none, for a missing ledger is a
    deleted one as often as a new deployment, and treating it as new would start every counter again."""
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
        return from_text(text)
    except (ValueError, TypeError, KeyError) as err:
        raise LedgerError(
            f"{path}: not a Tickets ledger ({err}); restore it from version control (git checkout -- {path.name})"
        ) from None


def init_ledger(path: Path, config: DeploymentConfig) -> Ledger:
    """Write the first ledger for `config`; LedgerError if one exists (it is never replaced)."""
    if path.exists():
        raise LedgerError(
            f"{path}: a ledger exists already; it is never replaced (a new one would forget what was issued). "
            "Synthesis checks cdk.json against it."
        )
    ledger = record(config, None)  # no account yet: the first synthesis records it
    write_ledger(path, ledger)
    return ledger


def write_ledger(path: Path, ledger: Ledger) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(to_text(ledger), encoding="utf-8")
    os.replace(temporary, path)  # a ledger is never left half written


def to_text(ledger: Ledger) -> str:
    """Sorted, two-space indented, one counter or slot per line, so a change is a one-line diff."""

    def entries(name: str, rows: Mapping[str, Any]) -> str:
        if not rows:
            return f'  "{name}": {{}}'
        lines = [f"    {json.dumps(key)}: {json.dumps(value, sort_keys=True)}" for key, value in rows.items()]
        return f'  "{name}": {{\n' + ",\n".join(lines) + "\n  }"

    counters = {
        key: {"start": _exact(c.start), "stride": _exact(c.stride), "shards": c.shards}
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
    return (
        "{\n"
        + ",\n".join(
            [
                f'  "//": {json.dumps(COMMENT)}',
                entries("counters", counters),
                f'  "defaultKeysServed": {json.dumps(sorted(ledger.default_keys_served))}',
                f'  "regionSlots": {ledger.region_slots}',
                entries("slots", slots),
                f'  "tableName": {json.dumps(ledger.table_name)}',
                f'  "unconfiguredKeysServed": {json.dumps(ledger.unconfigured_keys_served)}',
            ]
        )
        + "\n}\n"
    )


def from_text(text: str) -> Ledger:
    """A ledger from its file. One written before the rollout rule lacks unconfiguredKeysServed and
    defaultKeysServed: it is read as if every key could have been served unconfigured, the safe side."""
    raw = json.loads(text)
    _fields(
        raw,
        "the ledger",
        required={"regionSlots", "tableName", "slots", "counters"},
        optional={"//", "unconfiguredKeysServed", "defaultKeysServed"},
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
    )


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
