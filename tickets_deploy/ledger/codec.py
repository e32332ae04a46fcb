"""tickets.lock.json's text: `to_text` writes it sorted, one counter, slot or version per line, so a change
is a small diff; `from_text` reads the current format, `upgrade_text` every format the project wrote
(tests/unit/test_ledger_formats.py); the version id hashes the services as the file writes them."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from tickets.opaque import OpaqueConfig
from tickets.series.config import parse_series
from tickets_deploy.opaque_rules import opaque_settings
from tickets_deploy.rules import MAX_TICKET, exact_integer
from tickets_deploy.shapes import encode_number

from .deployed import check_deployed
from .fences import KeyEpoch, PendingFence
from .model import (
    COMMENT,
    LAYOUT_FIELDS,
    OPTIONAL_LAYOUT_FIELDS,
    VERSION_DIGITS,
    CounterRecord,
    Ledger,
    LedgerError,
    LedgerFile,
    SlotRecord,
    Version,
    fields_text,
)

_SLOT_KEY = re.compile(r"0|[1-9][0-9]{0,3}")
_ACCOUNT = re.compile(r"[0-9]{12}")


def version_id(parent: str | None, services: Mapping[str, Ledger]) -> str:
    """The first 16 hex digits of sha256 over the canonical JSON of the parent and the services; the
    parent is part of it, so a state reached again later is a new version."""
    canonical = json.dumps(
        {"parent": parent, "services": {name: _service_fields(s) for name, s in sorted(services.items())}},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:VERSION_DIGITS]


def _service_fields(ledger: Ledger) -> dict[str, Any]:
    """One service as the file writes it (and as its version id hashes it)."""
    return {
        "counters": {
            key: {name: encode_number(value) for name, value in sorted(c.to_json().items())}
            for key, c in sorted(ledger.counters.items())
        },
        "defaultKeysServed": sorted(ledger.default_keys_served),
        # Only from the version that first recorded them on: an older ledger hashes as it always did.
        **({"deployed": dict(ledger.deployed)} if ledger.deployed is not None else {}),
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
        # Only while a fence is begun and not recorded.
        **({"fencing": ledger.fencing.to_json()} if ledger.fencing is not None else {}),
    }


def _epochs_fields(ledger: Ledger) -> dict[str, list[dict[str, Any]]]:
    keys = sorted({epoch.key for epoch in ledger.epochs})
    return {key: [epoch.to_json() for epoch in ledger.epochs if epoch.key == key] for key in keys}


# The service's fields written one entry a line (the others on one line each).
_BLOCKS = {"counters", "epochs", "series", "slots"}


def to_text(ledger: LedgerFile) -> str:
    """Sorted, two-space indented, one counter, slot or version per line, so a change is a small diff."""

    def block(name: str, rows: Mapping[str, Any], indent: str) -> str:
        if not rows:
            return f'{indent}"{name}": {{}}'
        lines = [f"{indent}  {json.dumps(key)}: {json.dumps(value, sort_keys=True)}" for key, value in rows.items()]
        return f'{indent}"{name}": {{\n' + ",\n".join(lines) + f"\n{indent}}}"

    def service(name: str, ledger: Ledger) -> str:
        inner = "      "
        rows = [
            block(field, value, inner)
            if field in _BLOCKS
            else f"{inner}{json.dumps(field)}: {json.dumps(value, sort_keys=True)}"
            for field, value in sorted(_service_fields(ledger).items())
        ]
        return f"    {json.dumps(name)}: {{\n" + ",\n".join(rows) + "\n    }"

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
    """A ledger file in the current format from its text, lineage not checked (check_lineage); LedgerError
    naming UPGRADE_COMMAND for an older format."""
    raw = json.loads(text)
    if isinstance(raw, dict) and "tableName" in raw:
        raise LedgerError(f"format 1 (before versions): upgrade it once, `{UPGRADE_COMMAND}`, and commit it")
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
        if not (
            _is_version(entry["id"])
            and (entry["parent"] is None or _is_version(entry["parent"]))
            and isinstance(entry["change"], str)
        ):
            raise ValueError(
                f"versions[{index}]: id and parent (or null) not {VERSION_DIGITS} hex digits or change not text"
            )
        versions.append(Version(entry["id"], entry["parent"], entry["change"]))
    return LedgerFile(services, tuple(versions))


def upgrade_text(text: str) -> LedgerFile:
    """A ledger in any format the project wrote, in the current one. Format 1 (one service at the top) is that
    service with one root version; without unconfiguredKeysServed and defaultKeysServed (before the rollout
    rule), as if every key could have been served unconfigured: the safe side."""
    raw = json.loads(text)
    if not (isinstance(raw, dict) and "tableName" in raw):
        return from_text(text)
    flags = {"unconfiguredKeysServed": True, "defaultKeysServed": []}
    _fields(raw, "the ledger", required={"regionSlots", "tableName", "slots", "counters"}, optional={"//", *flags})
    service = _service_from({**flags, **{name: value for name, value in raw.items() if name != "//"}}, "the ledger")
    services = {service.table_name: service}
    version = Version(version_id(None, services), None, "recorded before the ledger had versions (format 1)")
    return LedgerFile(services, (version,))


UPGRADE_COMMAND = "python -m tickets_deploy upgrade-ledger"


def _is_version(raw: Any) -> bool:
    return isinstance(raw, str) and re.fullmatch(f"[0-9a-f]{{{VERSION_DIGITS}}}", raw) is not None


def _service_from(raw: Any, where: str) -> Ledger:
    required = {"regionSlots", "tableName", "slots", "counters", "unconfiguredKeysServed", "defaultKeysServed"}
    _fields(raw, where, required=required, optional={"series", "deployed", "epochs", "fencing"})
    region_slots = _whole(raw["regionSlots"], "regionSlots", low=1)
    if not isinstance(raw["tableName"], str):
        raise ValueError("tableName: not a string")
    slots = {int(name): _slot_from(name, entry, region_slots) for name, entry in _object(raw["slots"], "slots").items()}
    counters = {key: _counter_from(key, entry) for key, entry in _object(raw["counters"], "counters").items()}
    series = {
        key: _series_from(key, entry, region_slots) for key, entry in _object(raw.get("series", {}), "series").items()
    }
    served = raw["unconfiguredKeysServed"]
    if not isinstance(served, bool):
        raise ValueError("unconfiguredKeysServed: must be true or false")
    default_keys = raw["defaultKeysServed"]
    if not isinstance(default_keys, list) or not all(isinstance(key, str) for key in default_keys):
        raise ValueError("defaultKeysServed: must be a list of keys")
    recorded = _epochs_from(raw.get("epochs", {}))
    return Ledger(
        region_slots,
        raw["tableName"],
        dict(sorted(slots.items())),
        dict(sorted(counters.items())),
        unconfigured_keys_served=served,
        default_keys_served=frozenset(default_keys),
        series=dict(sorted(series.items())),
        deployed=check_deployed(raw["deployed"], counters, "deployed") if "deployed" in raw else None,
        epochs=recorded,
        fencing=_fencing_from(raw["fencing"], recorded) if "fencing" in raw else None,
    )


def _fencing_from(raw: Any, recorded: tuple[KeyEpoch, ...]) -> PendingFence:
    """A fence begun and not recorded: its id, and per key the next epoch and both layouts."""
    _fields(raw, "fencing", required={"id", "keys"}, optional=set())
    if not _is_version(raw["id"]):
        raise ValueError(f"fencing.id: not {VERSION_DIGITS} hex digits")
    keys = _object(raw["keys"], "fencing.keys")
    if not keys:
        raise ValueError("fencing.keys: empty")
    for key, entry in keys.items():
        where = f"fencing.keys.{key}"
        _fields(entry, where, required={"epoch", "from", "to"}, optional=set())
        numbers = [epoch.number for epoch in recorded if epoch.key == key]
        if _whole(entry["epoch"], f"{where}.epoch", low=1) != len(numbers) + 1:
            raise ValueError(f"{where}.epoch: not the epoch after the last recorded ({len(numbers)})")
        _layouts_from(entry, where)
    return PendingFence.from_json(raw)


def _epochs_from(raw: Any) -> tuple[KeyEpoch, ...]:
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
            _layouts_from(entry, where)
            epoch = KeyEpoch.from_json(key, entry)
            if epoch.number != index + 1 or epoch.fence < epoch.old.start:
                raise ValueError(f"{where}: not epoch {index + 1} with a fence at or above its old start")
            found.append(epoch)
    return tuple(found)


def _layouts_from(entry: Any, where: str) -> None:
    names = {"regionSlots", "shards", "start", "stride"}
    for side in ("from", "to"):
        _fields(entry[side], f"{where}.{side}", required=names, optional=set())
        for name in sorted(names):
            _whole(entry[side][name], f"{where}.{side}.{name}", low=0 if name == "start" else 1)


def _slot_from(name: str, entry: Any, region_slots: int) -> SlotRecord:
    if not _SLOT_KEY.fullmatch(name) or int(name) >= region_slots:
        raise ValueError(f"slots.{name}: not a slot below regionSlots ({region_slots})")
    _fields(entry, f"slots.{name}", required={"region"}, optional={"retired", "accounts"})
    if not isinstance(entry["region"], str) or entry.get("retired", True) is not True:
        raise ValueError(f"slots.{name}: region must be a name and retired, if present, true")
    accounts = entry.get("accounts", [])
    if not isinstance(accounts, list) or not all(isinstance(a, str) and _ACCOUNT.fullmatch(a) for a in accounts):
        raise ValueError(f"slots.{name}.accounts: must be a list of 12-digit account ids")
    return SlotRecord(entry["region"], retired="retired" in entry, accounts=tuple(sorted(accounts)))


def _counter_from(key: str, entry: Any) -> CounterRecord:
    """Every layout field (LAYOUT_FIELDS): start, stride and shards, whole numbers every ledger ever written has,
    and opaque where it was set, as cdk.json writes it (it must read back unchanged)."""
    names = {each.name for each in LAYOUT_FIELDS}
    _fields(entry, f"counters.{key}", required=names - OPTIONAL_LAYOUT_FIELDS, optional=set(OPTIONAL_LAYOUT_FIELDS))
    numbers = {
        each.attribute: _whole(entry[each.name], f"counters.{key}.{each.name}", low=0 if each.name == "start" else 1)
        for each in LAYOUT_FIELDS
        if each.name not in OPTIONAL_LAYOUT_FIELDS
    }
    return CounterRecord(**numbers, opaque=_opaque_from(entry.get("opaque"), f"counters.{key}.opaque"))


def _opaque_from(raw: Any, where: str) -> OpaqueConfig | None:
    return None if raw is None else _as_recorded(lambda: opaque_settings(raw, where), raw, where, "opaque settings")


def _series_from(key: str, entry: Any, region_slots: int) -> Mapping[str, Any]:
    """Recorded as the config wrote it: it must read back as a series, unchanged (an option at its default is
    never written, so an option added later reads an older record as its default)."""
    where = f"series.{key}"
    _as_recorded(lambda: parse_series(key, entry, region_slots=region_slots, where=where), entry, where, "a series")
    return dict(entry)


def _as_recorded(parse: Callable[[], Any], raw: Any, where: str, what: str) -> Any:
    """What `parse` (the config's parser) makes of `raw`, which it must write back unchanged."""
    try:
        parsed = parse()
    except ValueError as err:  # the config's error, as the ledger's
        raise ValueError(str(err)) from None
    if parsed.to_json() != raw:
        raise ValueError(f"{where}: not as the config records {what} ({fields_text(parsed.to_json())})")
    return parsed


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
