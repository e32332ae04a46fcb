"""The ledger file beside cdk.json: its history, a single line of versions each naming its parent
(docs/explanation/ledger.md#teams); read (lineage checked), written whole, initialised once (init_ledger_file)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tickets_deploy.schema import DeploymentConfig

from .codec import from_text, to_text, version_id
from .model import INIT_COMMAND, LEDGER_FILE, Ledger, LedgerError, LedgerFile, Version, config_from_ledger
from .rules import applied, record, table_problem


def record_services(
    previous: LedgerFile | None,
    configs: Mapping[str, DeploymentConfig],
    account: str | None = None,
    change: str | None = None,
    *,
    upgrade: bool = False,
) -> LedgerFile:
    """`configs` (by table name) each recorded by `record`, others kept: `previous` if unchanged, else a new version."""
    start = previous or LedgerFile({}, ())
    recorded, services = start.services, dict(start.services)
    problems: list[str] = []
    for name, config in sorted(configs.items()):
        try:
            services[name] = record(config, recorded.get(name), account, upgrade=upgrade)
        except LedgerError as err:
            problems.extend(f"{name}: {line}" for line in str(err).splitlines())
            continue
        for other, ledger in recorded.items():  # a new service where one no longer declared served: renamed?
            shared = sorted({entry.region for entry in ledger.slots.values()} & set(config.regions))
            if name not in recorded and other not in configs and shared:
                where = f" in {', '.join(shared)}, which cdk.json no longer declares"
                problems.append(f"{name}: {table_problem(other, config.table_name, where)}")
    if problems:
        raise LedgerError("\n".join(problems))
    services = dict(sorted(services.items()))
    if previous is not None and services == dict(previous.services):
        return previous
    parent = start.version
    described = change if change is not None else describe_change(recorded, services)
    return LedgerFile(services, (*start.versions, Version(version_id(parent, services), parent, described)))


def describe_change(previous: Mapping[str, Ledger], services: Mapping[str, Ledger]) -> str:
    """E.g. `tickets-counters: counters foo added`."""
    parts = []
    for name, ledger in services.items():
        old = previous.get(name)
        if old is None:
            parts.append(f"{name}: recorded")
        elif old != ledger:
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
    """LedgerError unless one line of versions, the last hashing the services (else two changes were checked alone)."""
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


def ledger_path_beside(config_file: Path) -> Path:
    return config_file.resolve().parent / LEDGER_FILE


def read_ledger_file(path: Path) -> LedgerFile:
    """Lineage checked; no file is refused: a deleted ledger taken as new would start every counter again."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LedgerError(_no_ledger(path)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise LedgerError(f"{path}: cannot read it ({err})") from None
    try:
        ledger = from_text(text)
    except LedgerError as err:  # an older format: the upgrade names itself
        raise LedgerError(f"{path}: {err}") from None
    except (ValueError, TypeError, KeyError) as err:
        if "<<<<<<<" in text:
            raise LedgerError(
                f"{path}: not a Tickets ledger (it holds git conflict markers). A ledger is never merged line by "
                f"line. {MERGE_WAY_OUT}"
            ) from None
        raise LedgerError(
            f"{path}: not a Tickets ledger ({err}); restore it from version control (git checkout -- {path.name})"
        ) from None
    check_lineage(ledger, str(path))
    return ledger


def _no_ledger(path: Path) -> str:
    name = path.name
    return "\n".join(
        [
            f"{path}: no ledger.",
            "A new deployment writes one for what the app declares, then commits it:",
            "  make init                      in a checkout of the Tickets repository",
            f"  {INIT_COMMAND:<30} in your own CDK app, in the directory of its cdk.json",
            "Deployed before? Never write a new one (it would forget what was issued). Restore it:",
            f"  git checkout -- {name}",
            "or, if a commit deleted it (an upgrade from a version that shipped an example ledger):",
            f"  git show $(git rev-list -n 1 HEAD -- {name})^:{name} > {name}",
            "(docs/how-to/upgrade.md#from-a-version-that-shipped-a-ledger)",
        ]
    )


# What a refused synthesis leaves: its validation runs before any template or ledger is written.
SYNTHESIS_REFUSED = "no template was written; the ledger is as it was"


def refusal(ledger_path: Path, err: LedgerError, outcome: str) -> str:
    return f"cdk.json: refused by the deployment ledger {ledger_path} ({outcome}):\n{err}"


def check_config_file(config_file: Path, config: DeploymentConfig, ledger_path: Path | None = None) -> LedgerFile:
    """The ledger at `ledger_path` (default: beside `config_file`), which must accept `config` as synthesis would
    (tickets_admin raise, migrate; the local server's warning)."""
    path = ledger_path if ledger_path is not None else ledger_path_beside(config_file)
    try:
        ledger = read_ledger_file(path)
        record_services(ledger, {config.table_name: config})
    except LedgerError as err:
        raise LedgerError(refusal(path, err, "nothing was written")) from None
    return ledger


def service_config(path: Path, table_name: str) -> DeploymentConfig:
    """What tickets_admin --service operates with: the service as the ledger at `path` records it deployed."""
    services = read_ledger_file(path).services
    if table_name not in services:
        raise LedgerError(f"{path}: no service {table_name!r} (the ledger records: {', '.join(services) or 'none'})")
    return config_from_ledger(services[table_name], str(path))


def read_ledger(path: Path) -> Ledger:
    services = read_ledger_file(path).services
    if len(services) != 1:
        raise LedgerError(f"{path}: records {len(services)} services ({', '.join(services)}), not one")
    return next(iter(services.values()))


def refuse_existing_ledger(path: Path, *, replace_undeployed: bool = False) -> None:
    """A ledger at `path` is replaced only by init --force, and only if it records no account (no deploy)."""
    if not path.exists():
        return
    try:
        services = read_ledger_file(path).services.values()
    except LedgerError as err:
        raise LedgerError(f"{path}: a ledger exists already; it is never replaced and cannot be read:\n{err}") from None
    deployed = sorted({f"{slot.region} in {account}" for each in services for slot in each.slots.values()
                       for account in slot.accounts})  # fmt: skip
    if deployed:
        raise LedgerError(
            f"{path}: a ledger exists already; it is never replaced (a new one would forget what was issued): it "
            f"records a deployment ({', '.join(deployed)}). Synthesis checks the app against it."
        )
    if not replace_undeployed:
        raise LedgerError(
            f"{path}: a ledger exists already. It records no deployment (no synthesis for an account, which "
            "every deploy runs first), so you may start over: `make init FORCE=1` (in your own app "
            f"`.venv/bin/{INIT_COMMAND} --force`) replaces it with one for what the app declares now."
        )


def init_ledger_file(
    path: Path, configs: Mapping[str, DeploymentConfig], *, replace_undeployed: bool = False
) -> LedgerFile:
    """Write the first ledger for `configs` (by table name): the one implementation of init."""
    refuse_existing_ledger(path, replace_undeployed=replace_undeployed)
    ledger = record_services(None, configs, None, INIT_COMMAND)  # no account yet: the first synthesis records it
    write_ledger_file(path, ledger)
    return ledger


def init_ledger(path: Path, config: DeploymentConfig) -> Ledger:
    return init_ledger_file(path, {config.table_name: config}).services[config.table_name]


def write_ledger_file(path: Path, ledger: LedgerFile) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(to_text(ledger), encoding="utf-8")
    os.replace(temporary, path)  # a ledger is never left half written


def new_accounts(previous: Ledger | LedgerFile | None, ledger: Ledger | LedgerFile) -> list[tuple[str, str]]:
    """(region, account) pairs that `ledger` records and `previous` did not: tables that start empty."""
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


def one_way_choices(previous: Ledger | LedgerFile | None, ledger: Ledger | LedgerFile) -> list[str]:
    """What `ledger` records for the first time that can never be taken back, each with why."""
    if isinstance(ledger, LedgerFile):
        before = previous.services if isinstance(previous, LedgerFile) else {}
        return [said for name, each in ledger.services.items() for said in one_way_choices(before.get(name), each)]
    old = previous if isinstance(previous, Ledger) else Ledger(ledger.region_slots, ledger.table_name)
    said = [
        f"{ledger.table_name}: slot {slot} is {entry.region}'s for good (a removed region keeps it: its retained "
        "table holds the slot's numbers)"
        for slot, entry in ledger.slots.items()
        if slot not in old.slots
    ]
    if ledger.unconfigured_keys_served and (previous is None or not old.unconfigured_keys_served):
        said.append(
            f"{ledger.table_name}: strictKeys false is recorded for good: a counter configured later keeps the "
            "layout of unconfigured keys unless fenced, even after strictKeys true (docs/how-to/add-a-counter.md)"
        )
    return said


def applied_from(config: DeploymentConfig, ledger_path: Path) -> DeploymentConfig:
    """`applied` with the ledger at `ledger_path`; a missing or unreadable one leaves the config (others say why)."""
    try:
        ledger = read_ledger_file(ledger_path).services.get(config.table_name)
    except LedgerError:
        return config
    return applied(config, ledger)
