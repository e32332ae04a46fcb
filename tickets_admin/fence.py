"""`python -m tickets_admin fence`: stop the old layout's lanes of every key whose layout cdk.json
changes, in every region's table, and record the fence and the new layout in the ledger as a new epoch
(docs/design.md#epochs-and-fences, docs/operations.md#changing-a-layout).

Before writing anything it refuses what no fence can make safe (tickets_deploy.epochs.refusals) and a
config the ledger would refuse for another reason. Each lane is stopped by one conditional write that
returns the item as it left it, so the `last` it reads is final: safe while traffic flows. An item
already stopped is read, so the command is safe to repeat; the epoch is recorded only once every region
that may hold old lanes is stopped, and then a repeat finds nothing to fence.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from tickets import lane_item
from tickets.epochs import STOPPED, fence_above, items_of
from tickets.lane_item import LAST, STEP, number
from tickets_deploy import epochs
from tickets_deploy.config import DeploymentConfig
from tickets_deploy.ledger import (
    Ledger,
    LedgerError,
    LedgerFile,
    Version,
    ledger_path_beside,
    read_ledger_file,
    record_services,
    version_id,
    write_ledger_file,
)

from .registry import Command, Context
from .table import AdminError, CounterTable, MissingTable

FENCE_DESCRIPTION = """\
Change a live layout (regionSlots, a key's shards or stride, a new counter for a key
that was served unconfigured) above a fence. Edit cdk.json first; synthesis refuses the
change and names this command. For every key whose layout changes it stops the key's
lanes of the old layout in every region's table (each lane's step becomes 0, which every
version refuses: a fence-aware function answers 503 and retries, version 0.2.0 answers
409 config_mismatch), reads each lane's final last, and records in the ledger
(tickets.lock.json) the fence, one above every ticket any old lane issued, and the new
layout, whose lanes begin at or above it. It prints, per key, the fence and the new
layout's first ticket. Then synthesise and deploy: the new lanes issue above the fence.

Safe while the service issues tickets, and safe to repeat. It refuses, before writing
anything, a change no fence can make safe (regionSlots down; regionSlots changed while
keys nobody configured may be served: strictKeys must be true)."""

FENCE_EPILOG = """\
examples:
  python -m tickets_admin fence                      # every region of cdk.json and the ledger
  python -m tickets_admin fence --region us-east-1   # part of a fence: records nothing yet
  python -m tickets_admin fence --endpoint-url us-east-1=http://127.0.0.1:8001 \\
      --endpoint-url eu-west-1=http://127.0.0.1:8002"""

_ATTEMPTS = 5  # a stop fails its condition only if the item changed shape meanwhile; then it is read again


def _fence_arguments(fence: argparse.ArgumentParser) -> None:
    """Several regions at once: --region and --endpoint-url repeated (the common ones are for one region)."""
    fence.add_argument(
        "--region",
        action="append",
        default=None,
        metavar="R",
        help="fence only this region (repeatable); the epoch is recorded once every region is fenced "
        "(default: every region cdk.json names and every region the ledger gave a slot)",
    )
    fence.add_argument(
        "--endpoint-url",
        action="append",
        default=None,
        metavar="[REGION=]URL",
        help="a DynamoDB-compatible endpoint: URL for every region, or REGION=URL, repeated, one per region",
    )


def _run(args: argparse.Namespace, context: Context) -> int:
    return run_fence(args, context, report=lambda line: print(line, flush=True))


def run_fence(args: argparse.Namespace, context: Context, report: Callable[[str], None]) -> int:
    config = context.config
    path = ledger_path_beside(context.config_file)
    file, ledger = _ledger(context, path)
    problems = epochs.refusals(config, ledger)
    if problems:
        raise LedgerError("fence refused, nothing was written:\n" + "\n".join(problems))
    changes = epochs.plan(config, ledger)
    if not changes:
        report(f"nothing to fence: the ledger already records every layout {context.config_file} gives")
        return 0
    _check_rest(file, config, changes)
    _check_one_account(ledger)
    needed = _regions_with_old_lanes(ledger)
    regions = args.region or sorted(needed | set(config.regions))
    endpoints = _endpoints(args.endpoint_url or [], sorted(needed | set(regions)))
    # Every region's old lanes are read before any is stopped, a partial run's (--region) too: another
    # region's lanes may already put the new start above max, and this run would stop its lanes for nothing.
    old_lanes = {region: CounterTable(context.table_name, region, endpoints.get(region)) for region in sorted(needed)}
    _check_max(config, *_epochs_now(changes, old_lanes))
    tables = {region: old_lanes[region] for region in regions if region in needed}
    lasts: dict[str, list[int | None]] = {change.key: [] for change in changes}
    fenced = set()
    for region in regions:
        if region not in tables:
            report(f"{region}: no slot in the old layout, so no old lanes: nothing to stop")
            continue
        table = tables[region]
        for change in changes:
            for name in items_of(change.key, change.number - 1, change.old.shards):
                lasts[change.key].append(_stop(table, name))
        fenced.add(region)
        report(f"{region}: stopped the old lanes of {', '.join(change.key for change in changes)}")
    if needed - fenced:
        report(
            f"not recorded yet: {', '.join(sorted(needed - fenced))} still to fence (run again with those regions, "
            "or with none); the lanes stopped so far stay stopped"
        )
        return 0
    recorded = [change.epoch(fence_above(change.old.start, lasts[change.key])) for change in changes]
    _check_max(config, recorded, "the old lanes stay stopped (each region answers 503 for them); nothing was recorded")
    write_ledger_file(path, _with_epochs(file, config.table_name, recorded))
    for epoch in recorded:
        report(
            f"{epoch.key}: fence {epoch.fence}; epoch {epoch.number} ({epoch.configured.describe()}) starts at "
            f"{epoch.start}"
        )
    report(f"recorded in {path}; now synthesise and deploy (docs/operations.md#changing-a-layout)")
    return 0


def _ledger(context: Context, path: Path) -> tuple[LedgerFile, Ledger]:
    """The ledger file beside cdk.json and the service it records for the config."""
    if context.from_ledger:
        raise AdminError(
            "fence compares an edited cdk.json (--config) with the ledger beside it; --service has only the "
            "ledger's config, which it records already: run fence with --config"
        )
    file = read_ledger_file(path)
    ledger = file.services.get(context.config.table_name)
    if ledger is None:
        raise AdminError(f"{path} records no service {context.config.table_name!r}: synthesise it first")
    return file, ledger


def _stop(table: CounterTable, name: str) -> int | None:
    """Stop one old lane item; its final `last` (None: it issued nothing)."""
    try:
        for _ in range(_ATTEMPTS):
            item = table.update(name, lane_item.stop())
            if item is None:
                item = table.get(name)
                if item is not None and number(item, STEP) == STOPPED:
                    return _last(name, item)
                item = table.update(name, lane_item.stop_unwritten())
            if item is not None:
                return _last(name, item)
    except (ClientError, BotoCoreError) as err:
        raise table.explain(err) from None
    raise AdminError(f"{name}: the item kept changing shape under {_ATTEMPTS} attempts; run the command again")


def _last(name: str, item: lane_item.Item) -> int | None:
    if LAST in item and number(item, LAST) is None:
        raise AdminError(f"{name}: its last is not a whole number ({item[LAST]}); fix it by hand, then run fence again")
    return number(item, LAST)


def _regions_with_old_lanes(ledger: Ledger) -> set[str]:
    """Every region the ledger ever gave a slot, retired ones included: their tables hold old lanes."""
    return {entry.region for entry in ledger.slots.values()}


def _endpoints(given: list[str], regions: list[str]) -> dict[str, str]:
    """--endpoint-url URL (every region) or REGION=URL, repeated."""
    endpoints: dict[str, str] = {}
    for each in given:
        region, equals, url = each.partition("=")
        if not equals or "://" in region:
            endpoints.update({r: each for r in regions})
        else:
            endpoints[region] = url
    return endpoints


def _check_rest(file: LedgerFile, config: DeploymentConfig, changes: list[epochs.Change]) -> None:
    """Refuse, before writing anything, a config the ledger would refuse for another reason than the fence."""
    name = config.table_name
    trial = _with_epochs(file, name, [change.epoch(change.old.start) for change in changes])
    try:
        record_services(trial, {name: config})
    except LedgerError as err:
        raise LedgerError(f"fence refused, nothing was written: cdk.json has other problems:\n{err}") from None


def _check_one_account(ledger: Ledger) -> None:
    """Refuse a ledger shared by several accounts (staging and production from one cdk.json): fence reaches the
    tables of the account whose credentials it runs with, and an epoch recorded after stopping one account's
    lanes would let another account's new lanes issue numbers its old lanes already issued."""
    accounts = sorted({account for slot in ledger.slots.values() for account in slot.accounts})
    if len(accounts) > 1:
        raise LedgerError(
            f"fence refused, nothing was written: the ledger records tables in {len(accounts)} accounts "
            f"({', '.join(accounts)}), and fence stops the lanes of one account only (the credentials it runs "
            "with). Give each account its own ledger before changing a layout (docs/operations.md#changing-a-layout)"
        )


def _epochs_now(changes: list[epochs.Change], tables: dict[str, CounterTable]) -> tuple[list[epochs.KeyEpoch], str]:
    """The epochs as the old lanes stand now in every region, read before this run stops any (lanes only grow, so
    the fence found after stopping them is at least this one), and what a refusal now leaves behind: nothing,
    or the lanes an earlier partial run stopped."""
    now, stopped = [], False
    for change in changes:
        names = items_of(change.key, change.number - 1, change.old.shards)
        items = [(name, _read(table, name)) for table in tables.values() for name in names]
        lasts = [_last(name, item) for name, item in items if item is not None]
        stopped = stopped or any(item is not None and number(item, STEP) == STOPPED for _, item in items)
        now.append(change.epoch(fence_above(change.old.start, lasts)))
    if stopped:
        return now, (
            "this run stopped and recorded nothing; the lanes an earlier run stopped stay stopped (their regions "
            "answer 503 for the key) until a run of fence records the epoch"
        )
    return now, "nothing was stopped or recorded"


def _read(table: CounterTable, name: str) -> lane_item.Item | None:
    try:
        return table.get(name)
    except MissingTable as err:
        raise AdminError(
            f"{err}. The ledger gives {table.region} a slot, so fence reads its table; a region synthesised but "
            f"never deployed has none yet: deploy it first with the config the ledger records (the cdk.json of its "
            f"last version: set this change aside, make deploy), then run fence again. If {table.region} was "
            f"deployed, name its endpoint (--endpoint-url {table.region}=URL) or table (--table). Nothing was stopped"
        ) from None
    except (ClientError, BotoCoreError) as err:
        raise AdminError(
            f"{table.explain(err)}. fence reads every region's old lanes before it stops any (with --region too), "
            "so each region that ever had a slot must be reachable (--endpoint-url REGION=URL); nothing was stopped"
        ) from None


def _check_max(config: DeploymentConfig, recorded: list[epochs.KeyEpoch], then: str) -> None:
    """A new layout must begin at or below max. Checked on the lanes as they stand before anything is
    stopped, and again on their final lasts (which requests may have moved in between)."""
    for epoch in recorded:
        counter = config.counters.get(epoch.key)
        maximum = counter.max if counter is not None else None
        if maximum is not None and epoch.start > maximum:
            raise AdminError(
                f"counters.{epoch.key}: its new layout would start at {epoch.start}, above max ({maximum}); raise max "
                f"in cdk.json and run fence again ({then})"
            )


def _with_epochs(file: LedgerFile, name: str, recorded: list[epochs.KeyEpoch]) -> LedgerFile:
    services = {**file.services, name: epochs.record(file.services[name], recorded)}
    change = "fence: " + ", ".join(f"{e.key} above {e.fence} (epoch {e.number})" for e in recorded)
    parent = file.version
    return replace(
        file, services=services, versions=(*file.versions, Version(version_id(parent, services), parent, change))
    )


COMMAND = Command(
    "fence",
    "stop the old layout's lanes above a fence in every region and record the epoch in the ledger",
    FENCE_DESCRIPTION,
    FENCE_EPILOG,
    _run,
    _fence_arguments,
    several_regions=True,
)
