"""The ledger's history: a single line of versions, each naming its parent (docs/explanation/ledger.md#teams)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tickets_deploy.schema import DeploymentConfig

from .codec import version_id
from .model import LEDGER_FILE, Ledger, LedgerError, LedgerFile, Version
from .rules import record, table_problem


def record_services(
    previous: LedgerFile | None,
    configs: Mapping[str, DeploymentConfig],
    account: str | None = None,
    change: str | None = None,
    *,
    upgrade: bool = False,
) -> LedgerFile:
    """The ledger file after deploying `configs` (by table name) to `account`, each service by `record`; those no
    longer declared are kept. `previous` itself when nothing changed, else one more version (`change`: its line)."""
    recorded: Mapping[str, Ledger] = previous.services if previous is not None else {}
    services = dict(recorded)
    problems: list[str] = []
    for name, config in sorted(configs.items()):
        try:
            services[name] = record(config, recorded.get(name), account, upgrade=upgrade)
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
) -> Iterator[str]:
    """A new service in a region where one the app no longer declares served: most likely tableName changed."""
    for name, ledger in recorded.items():
        shared = sorted({entry.region for entry in ledger.slots.values()} & set(config.regions))
        if name not in configs and shared:
            yield table_problem(name, config.table_name, f" in {', '.join(shared)}, which cdk.json no longer declares")


def describe_change(previous: Mapping[str, Ledger], services: Mapping[str, Ledger]) -> str:
    """E.g. `tickets-counters: counters foo added`."""
    parts = []
    for name, ledger in services.items():
        old = previous.get(name)
        if old is None:
            parts.append(f"{name}: recorded")
            continue
        if old == ledger:
            continue
        said = [*_recorded_changes(old, ledger), *_served_changes(old, ledger), *_deployed_changes(old, ledger)]
        parts.append(f"{name}: {'; '.join(said)}")
    return "; ".join(parts) or "no change"


def _recorded_changes(old: Ledger, ledger: Ledger) -> Iterator[str]:
    for kind, now, recorded in (("counters", ledger.counters, old.counters), ("series", ledger.series, old.series)):
        added = [key for key in now if key not in recorded]
        if added:
            yield f"{kind} {', '.join(added)} added"
    for key, counter in ledger.counters.items():
        before = old.counters.get(key)
        if before and before.opaque and counter.opaque and before.opaque.key_version != counter.opaque.key_version:
            yield f"{key} key version {before.opaque.key_version} -> {counter.opaque.key_version}"
    for slot, entry in ledger.slots.items():
        was = old.slots.get(slot)
        if was is None or was.retired and not entry.retired:
            yield f"{entry.region} on slot {slot}"
        elif entry.retired and not was.retired:
            yield f"{entry.region} retired from slot {slot}"
        elif entry.accounts != was.accounts:
            yield f"{entry.region} account {', '.join(sorted(set(entry.accounts) - set(was.accounts)))}"


def _served_changes(old: Ledger, ledger: Ledger) -> Iterator[str]:
    if ledger.unconfigured_keys_served and not old.unconfigured_keys_served:
        yield "unconfigured keys served (strictKeys false)"
    served = sorted(ledger.default_keys_served - old.default_keys_served)
    if served:
        yield f"default key {', '.join(served)} served unconfigured"


def _deployed_changes(old: Ledger, ledger: Ledger) -> list[str]:
    if ledger.deployed is None or old.deployed == ledger.deployed:
        return []
    before, now = _flat(old.deployed or {}), _flat(ledger.deployed)
    changed = [
        f"{name} {now.get(name, 'default')}"
        for name in sorted(set(before) | set(now))
        if before.get(name) != now.get(name)
    ]
    return [f"deployed {', '.join(changed)}" if changed else "deployed settings recorded"]


def _flat(settings: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """`{"counters": {"k": {"max": 9}}}` as `{"counters.k.max": "9"}`."""
    flat: dict[str, str] = {}
    for name, value in settings.items():
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value if isinstance(value, str) else json.dumps(value)
    return flat


MERGE_WAY_OUT = (
    f"Re-record one change on top of the other: restore one side's ledger (`git checkout --ours -- {LEDGER_FILE}`, "
    "or --theirs), keep the merged cdk.json and synthesise again (docs/how-to/work-as-a-team.md)."
)


def check_lineage(ledger: LedgerFile, where: str) -> None:
    """LedgerError unless the history is a single line whose last version hashes the services: else two changes
    were each checked alone, never one after the other."""
    if not ledger.versions:
        raise LedgerError(f"{where}: versions: empty; restore the ledger from version control")
    first = ledger.versions[0]
    if first.parent is not None:
        raise LedgerError(
            f"{where}: versions: the first version {first.id} names a parent ({first.parent}): its history was "
            f"cut. Restore the ledger from version control (git log -- {LEDGER_FILE})."
        )
    ids = [version.id for version in ledger.versions]
    for index, version in enumerate(ledger.versions[1:], 1):
        if version.parent == ids[index - 1]:
            continue
        if version.parent in ids[:index]:
            sibling = ledger.versions[ids.index(version.parent) + 1]
            raise LedgerError(
                f"{where}: versions: {sibling.id} ({sibling.change}) and {version.id} ({version.change}) are two "
                f"children of {version.parent}: a merge kept two branches' changes. {MERGE_WAY_OUT}"
            )
        raise LedgerError(
            f"{where}: versions: {version.id} names parent {version.parent}, not the version before it "
            f"({ids[index - 1]}): the history is not a single line. {MERGE_WAY_OUT}"
        )
    last = ledger.versions[-1]
    actual = version_id(last.parent, ledger.services)
    if actual != last.id:
        raise LedgerError(
            f"{where}: its services hash to {actual}, not to its last version {last.id} ({last.change}): the "
            f"file was edited by hand or merged line by line. {MERGE_WAY_OUT}"
        )
