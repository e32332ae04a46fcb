"""The deployment ledger, tickets.lock.json: every setting that decides which numbers a lane owns, as
ever synthesised, so that a later deploy cannot hand out a number again (docs/design.md).

A fresh table cannot know what another region, an earlier slot owner or a deleted stack issued, and
the CDK cannot ask AWS at synthesis; the ledger, committed beside cdk.json, remembers it instead.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickets.settings import MAX_SAFE_INTEGER, CounterConfig
from tickets_deploy.config import DeploymentConfig

LEDGER_FILE = "tickets.lock.json"
LEDGER_ENV = "TICKETS_LEDGER"  # another path, for tests and for apps run from elsewhere
COMMENT = (
    "Tickets deployment ledger, kept by cdk synth: the region slots, table name and counter "
    "settings ever deployed, so a deploy cannot repeat a ticket. Commit it with cdk.json; never "
    "edit or delete it (README: Operations)."
)
_SLOT_KEY = re.compile(r"0|[1-9][0-9]{0,3}")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,19}")


class LedgerError(ValueError):
    """A config the ledger refuses, or a ledger file that cannot be read; the message says what to do."""


@dataclass(frozen=True)
class SlotRecord:
    region: str
    retired: bool = False  # the region was removed: its retained table holds this slot's tickets


@dataclass(frozen=True)
class CounterRecord:
    start: int
    stride: int
    shards: int

    @classmethod
    def of(cls, counter: CounterConfig) -> CounterRecord:
        return cls(start=counter.start, stride=counter.stride, shards=counter.shards)


@dataclass(frozen=True)
class Ledger:
    region_slots: int
    table_name: str
    slots: Mapping[int, SlotRecord] = field(default_factory=dict)
    counters: Mapping[str, CounterRecord] = field(default_factory=dict)


def record(config: DeploymentConfig, previous: Ledger | None) -> Ledger:
    """The ledger after deploying `config`; LedgerError listing every change that could repeat a ticket.
    No previous ledger means a new deployment: everything is recorded as it stands."""
    counters = {key: CounterRecord.of(counter) for key, counter in config.counters.items()}
    if previous is None:
        slots = {slot: SlotRecord(region) for region, slot in config.regions.items()}
        return Ledger(
            config.region_slots, config.table_name, dict(sorted(slots.items())), dict(sorted(counters.items()))
        )

    problems = [
        *_table_problems(config, previous),
        *_slot_problems(config, previous),
        *_counter_problems(config, previous),
    ]
    if problems:
        raise LedgerError("\n".join(problems))

    slots = {slot: SlotRecord(entry.region, retired=True) for slot, entry in previous.slots.items()}
    slots.update({slot: SlotRecord(region) for region, slot in config.regions.items()})
    return Ledger(
        previous.region_slots,
        previous.table_name,
        dict(sorted(slots.items())),
        dict(sorted({**previous.counters, **counters}.items())),
    )


def _table_problems(config: DeploymentConfig, previous: Ledger) -> list[str]:
    problems = []
    if config.table_name != previous.table_name:
        problems.append(
            f"tableName: the ledger records {previous.table_name!r}, cdk.json says {config.table_name!r}. A new "
            "name is a new, empty table, where every counter would start again at its start and repeat every "
            f"ticket already issued. Keep {previous.table_name!r} (README: Operations)."
        )
    if config.region_slots != previous.region_slots:
        problems.append(
            f"regionSlots: the ledger records {previous.region_slots}, cdk.json says {config.region_slots}. "
            "Every counter's lanes are laid out over regionSlots (step = stride x regionSlots x shards), so the "
            "new lanes would reissue numbers the old ones issued. Keep regionSlots at "
            f"{previous.region_slots}; add regions only on its free slots."
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
                f"{where}: the ledger records {key} (start {recorded.start}, stride {recorded.stride}, shards "
                f"{recorded.shards}), cdk.json no longer configures it. It would be served with the defaults "
                f"(start 1, stride 1, shards 1), or, reconfigured later, with settings the ledger could no "
                f"longer check, repeating its tickets. Keep {key} in cdk.json as recorded (it may stay unused)."
            )
            continue
        for name in ("start", "stride", "shards"):
            old, new = getattr(recorded, name), getattr(counter, name)
            if old != new:
                problems.append(
                    f"{where}.{name}: the ledger records {old}, cdk.json says {new}. "
                    f"{why[name].format(key=key)}; for a different numbering, add a new counter key."
                )
    return problems


# --- the file -----------------------------------------------------------------------------------


def default_ledger_path() -> Path:
    """Beside cdk.json: the CDK CLI runs the app in the directory that holds cdk.json."""
    return Path(os.environ.get(LEDGER_ENV) or LEDGER_FILE)


def read_ledger(path: Path) -> Ledger | None:
    """The ledger at `path`, or None if there is none (a new deployment)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise LedgerError(f"{path}: cannot read it ({err})") from None
    try:
        return from_text(text)
    except (ValueError, TypeError, KeyError) as err:
        raise LedgerError(
            f"{path}: not a Tickets ledger ({err}); restore it from version control (git checkout -- {path.name})"
        ) from None


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
        str(slot): {"region": s.region, **({"retired": True} if s.retired else {})}
        for slot, s in sorted(ledger.slots.items())
    }
    return (
        "{\n"
        + ",\n".join(
            [
                f'  "//": {json.dumps(COMMENT)}',
                entries("counters", counters),
                f'  "regionSlots": {ledger.region_slots}',
                entries("slots", slots),
                f'  "tableName": {json.dumps(ledger.table_name)}',
            ]
        )
        + "\n}\n"
    )


def from_text(text: str) -> Ledger:
    raw = json.loads(text)
    _fields(raw, "the ledger", required={"regionSlots", "tableName", "slots", "counters"}, optional={"//"})
    region_slots = _whole(raw["regionSlots"], "regionSlots", low=1)
    if not isinstance(raw["tableName"], str):
        raise ValueError("tableName: not a string")
    slots = {}
    for name, entry in _object(raw["slots"], "slots").items():
        if not _SLOT_KEY.fullmatch(name) or int(name) >= region_slots:
            raise ValueError(f"slots.{name}: not a slot below regionSlots ({region_slots})")
        _fields(entry, f"slots.{name}", required={"region"}, optional={"retired"})
        if not isinstance(entry["region"], str) or entry.get("retired", True) is not True:
            raise ValueError(f"slots.{name}: region must be a name and retired, if present, true")
        slots[int(name)] = SlotRecord(entry["region"], retired="retired" in entry)
    counters = {}
    for key, entry in _object(raw["counters"], "counters").items():
        _fields(entry, f"counters.{key}", required={"start", "stride", "shards"}, optional=set())
        counters[key] = CounterRecord(
            start=_whole(entry["start"], f"counters.{key}.start", low=0),
            stride=_whole(entry["stride"], f"counters.{key}.stride", low=1),
            shards=_whole(entry["shards"], f"counters.{key}.shards", low=1),
        )
    return Ledger(region_slots, raw["tableName"], dict(sorted(slots.items())), dict(sorted(counters.items())))


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
    if isinstance(raw, str) and _DECIMAL.fullmatch(raw):
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < low:
        raise ValueError(f"{where}: not a whole number >= {low}")
    return raw
