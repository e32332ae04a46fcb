"""tickets.lock.json's text: written sorted, one counter, slot or version per line (a change is a small diff); read
in the current format, refusing what the writer would not write back; format 1 read only by `upgrade_text`."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from tickets.epochs import Layout
from tickets_deploy.access import ACCOUNT_PATTERN
from tickets_deploy.field import encode_plain
from tickets_deploy.rules import MAX_TICKET, exact_integer, opaque_settings

from ..series_rules import parse_series
from . import model
from .model import check_deployed

UPGRADE_COMMAND = "python -m tickets_deploy upgrade-ledger"
_SLOT_KEY = re.compile(r"0|[1-9][0-9]{0,3}")


def version_id(parent: str | None, services: Mapping[str, model.Ledger]) -> str:
    """sha256 of the parent and the services as the file writes them: a state reached again is a new version."""
    canonical = json.dumps(
        {"parent": parent, "services": {name: _service_fields(s) for name, s in sorted(services.items())}},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[: model.VERSION_DIGITS]


def _service_fields(ledger: model.Ledger) -> dict[str, Any]:
    """One service as the file writes and hashes it; a field added later only where set (old ledgers hash alike)."""
    epochs = {key: [epoch.to_json() for epoch in ledger.epochs if epoch.key == key] for key in
              sorted({epoch.key for epoch in ledger.epochs})}  # fmt: skip
    return {
        "counters": encode_plain(ledger.counters),
        "defaultKeysServed": sorted(ledger.default_keys_served),
        **({"deployed": dict(ledger.deployed)} if ledger.deployed is not None else {}),
        "regionSlots": ledger.region_slots,
        "slots": {str(slot): entry.to_json() for slot, entry in sorted(ledger.slots.items())},
        "unconfiguredKeysServed": ledger.unconfigured_keys_served,
        **({"series": {key: dict(fields) for key, fields in ledger.series.items()}} if ledger.series else {}),
        **({"epochs": epochs} if epochs else {}),
        **({"fencing": ledger.fencing.to_json()} if ledger.fencing is not None else {}),
    }


def to_text(ledger: model.LedgerFile) -> str:
    def entry(indent: str, name: str, value: Any) -> str:
        return f"{indent}{json.dumps(name)}: {json.dumps(value, sort_keys=True)}"

    def entries(indent: str, name: str, lines: list[str]) -> str:
        return f"{indent}{json.dumps(name)}: " + ("{\n" + ",\n".join(lines) + f"\n{indent}}}" if lines else "{}")

    def service(name: str, ledger: model.Ledger) -> str:
        inner = " " * 6
        rows = [
            entries(inner, field, [entry(inner + "  ", key, each) for key, each in value.items()])
            if field in {"counters", "epochs", "series", "slots"}  # written an entry a line
            else entry(inner, field, value)
            for field, value in sorted(_service_fields(ledger).items())
        ]
        return entries("    ", name, rows)

    services = [service(name, each) for name, each in sorted(ledger.services.items())]
    versions = ",\n".join(
        f"    {json.dumps({'id': v.id, 'parent': v.parent, 'change': v.change})}" for v in ledger.versions
    )
    return (
        "{\n"
        f"{entry('  ', '//', model.COMMENT)},\n"
        f"{entries('  ', 'services', services)},\n"
        f'  "versions": [\n{versions}\n  ]\n'
        "}\n"
    )


def from_text(text: str) -> model.LedgerFile:
    """A ledger file in the current format, lineage not checked (check_lineage)."""
    raw = json.loads(text)
    if isinstance(raw, dict) and "tableName" in raw:
        raise model.LedgerError(f"format 1 (before versions): upgrade it once, `{UPGRADE_COMMAND}`, and commit it")
    _fields(raw, "the ledger", required={"services", "versions"}, optional={"//"})
    services = {
        name: _service_from({**_object(entry, f"services.{name}"), "tableName": name})
        for name, entry in sorted(_object(raw["services"], "services").items())
    }
    versions = []
    for index, entry in enumerate(_list(raw["versions"], "versions")):
        _fields(entry, f"versions[{index}]", required={"id", "parent", "change"}, optional=set())
        if not (
            _is_version(entry["id"])
            and (entry["parent"] is None or _is_version(entry["parent"]))
            and isinstance(entry["change"], str)
        ):
            raise ValueError(
                f"versions[{index}]: id and parent (or null) not {model.VERSION_DIGITS} hex digits or change not text"
            )
        versions.append(model.Version(entry["id"], entry["parent"], entry["change"]))
    return model.LedgerFile(services, tuple(versions))


def upgrade_text(text: str) -> model.LedgerFile:
    """Any format the project wrote: format 1 gets one root version, unconfiguredKeysServed true if absent (safe)."""
    raw = json.loads(text)
    if not (isinstance(raw, dict) and "tableName" in raw):
        return from_text(text)
    service = _service_from({"unconfiguredKeysServed": True, "defaultKeysServed": [], **raw, "//": None})
    services = {service.table_name: service}
    version = model.Version(version_id(None, services), None, "recorded before the ledger had versions (format 1)")
    return model.LedgerFile(services, (version,))


def _is_version(raw: Any) -> bool:
    return isinstance(raw, str) and re.fullmatch(f"[0-9a-f]{{{model.VERSION_DIGITS}}}", raw) is not None


def _service_from(raw: dict[str, Any]) -> model.Ledger:
    """A service, each value by its rule, refused unless the writer writes it back exactly as it stands."""
    raw = {name: value for name, value in raw.items() if name != "//"}
    region_slots = _whole(raw.get("regionSlots"), "regionSlots", low=1)
    counters = {key: _counter_from(key, entry) for key, entry in _object(raw.get("counters"), "counters").items()}
    for key, entry in _object(raw.get("series", {}), "series").items():
        # As the config wrote it (an option at its default is never written: one added later reads as its default).
        parse = functools.partial(parse_series, key, entry, region_slots=region_slots, where=f"series.{key}")
        _as_recorded(parse, entry, f"series.{key}", "a series")
    epochs = tuple(_epochs_from(_object(raw.get("epochs", {}), "epochs")))
    ledger = model.Ledger(
        region_slots,
        raw["tableName"],
        dict(_slot_from(name, entry, region_slots) for name, entry in _object(raw.get("slots"), "slots").items()),
        counters,
        unconfigured_keys_served=raw.get("unconfiguredKeysServed") is True,
        default_keys_served=frozenset(raw.get("defaultKeysServed") or ()),
        series=dict(raw.get("series", {})),
        deployed=check_deployed(raw["deployed"], counters, "deployed") if "deployed" in raw else None,
        epochs=epochs,
        fencing=_fencing_from(raw["fencing"], epochs) if "fencing" in raw else None,
    )
    written = {**_service_fields(ledger), "tableName": ledger.table_name}
    for name in sorted(set(raw) | set(written)):
        if raw.get(name) != written.get(name):
            said = f"not as the ledger writes it ({written[name]!r})" if name in written else "not a field of a service"
            raise ValueError(f"{name}: {said}" if name in raw else f"{name}: missing")
    return ledger


def _slot_from(name: str, entry: Any, region_slots: int) -> tuple[int, model.SlotRecord]:
    if not _SLOT_KEY.fullmatch(name) or int(name) >= region_slots:
        raise ValueError(f"slots.{name}: not a slot below regionSlots ({region_slots})")
    accounts = _object(entry, f"slots.{name}").get("accounts", [])
    if not isinstance(accounts, list) or not all(isinstance(a, str) and ACCOUNT_PATTERN.fullmatch(a) for a in accounts):
        raise ValueError(f"slots.{name}.accounts: must be a list of 12-digit account ids")
    if not isinstance(entry.get("region"), str):
        raise ValueError(f"slots.{name}: region must be a name")
    return int(name), model.SlotRecord(entry["region"], retired="retired" in entry, accounts=tuple(accounts))


def _fencing_from(raw: Any, recorded: tuple[model.KeyEpoch, ...]) -> model.PendingFence:
    if not _is_version(_object(raw, "fencing").get("id")):
        raise ValueError(f"fencing.id: not {model.VERSION_DIGITS} hex digits")
    keys = _object(raw.get("keys"), "fencing.keys")
    if not keys:
        raise ValueError("fencing.keys: empty")
    changes = [_change_from(key, entry, f"fencing.keys.{key}") for key, entry in sorted(keys.items())]
    for change in changes:
        last = len([epoch for epoch in recorded if epoch.key == change.key])
        if change.number != last + 1:
            raise ValueError(f"fencing.keys.{change.key}.epoch: not the epoch after the last recorded ({last})")
    return model.PendingFence(raw["id"], tuple(changes))


def _epochs_from(raw: dict[str, Any]) -> list[model.KeyEpoch]:
    found = []
    for key, entries in raw.items():
        for index, entry in enumerate(_list(entries, f"epochs.{key}")):
            where = f"epochs.{key}[{index}]"
            epoch = _change_from(key, entry, where).epoch(_whole(entry.get("fence"), f"{where}.fence", low=0))
            if epoch.number != index + 1 or epoch.fence < epoch.old.start:
                raise ValueError(f"{where}: not epoch {index + 1} with a fence at or above its old start")
            found.append(epoch)
    return found


def _change_from(key: str, entry: Any, where: str) -> model.Change:
    number = _whole(_object(entry, where).get("epoch"), f"{where}.epoch", low=1)
    old, configured = (
        Layout(*_numbers(entry.get(side), f"{where}.{side}", ("start", "stride", "shards", "regionSlots")))
        for side in ("from", "to")
    )
    return model.Change(key, number, old, configured)


def _counter_from(key: str, entry: Any) -> model.CounterRecord:
    where = f"counters.{key}"
    start, stride, shards = _numbers(entry, where, ("start", "stride", "shards"))
    opaque, where = entry.get("opaque"), f"{where}.opaque"
    if opaque is not None:
        opaque = _as_recorded(functools.partial(opaque_settings, opaque, where), opaque, where, "opaque settings")
    return model.CounterRecord(start, stride, shards, opaque)


def _numbers(raw: Any, where: str, names: tuple[str, ...]) -> list[int]:
    return [_whole(_object(raw, where).get(name), f"{where}.{name}", low=int(name != "start")) for name in names]


def _as_recorded(parse: Callable[[], Any], raw: Any, where: str, what: str) -> Any:
    parsed = parse()
    if parsed.to_json() != raw:
        raise ValueError(f"{where}: not as the config records {what} ({model.fields_text(parsed.to_json())})")
    return parsed


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: not an object")
    return raw


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise ValueError(f"{where}: not a list")
    return raw


def _fields(raw: Any, where: str, *, required: set[str], optional: set[str]) -> None:
    present = set(_object(raw, where))
    if required - present or present - required - optional:
        raise ValueError(
            f"{where}: expected the fields {', '.join(sorted(required | optional))}, "
            f"found {', '.join(sorted(present)) or 'none'}"
        )


def _whole(raw: Any, where: str, *, low: int) -> int:
    return exact_integer(raw, low=low, high=MAX_TICKET, where=where)
