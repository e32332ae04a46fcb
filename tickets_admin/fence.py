"""`.venv/bin/python -m tickets_admin fence`: stop the old layout's lanes of every key whose layout cdk.json
changes, in every region's table, and record the fence and the new layout in the ledger as a new epoch
(docs/explanation/epochs-and-fences.md, docs/how-to/change-a-layout.md).

Before writing anything it refuses what no fence can make safe (tickets_deploy.ledger.fence_refusals), a config
the ledger would refuse for another reason, and what it reads in the tables (fence_lanes.survey): a lane
another fence stopped (another line of history changed the layout), a region without a table. Then it
records the fence as pending in the ledger (its id and its changes) before it stops any lane, each stop
recording that id, so every stopped lane is known to this ledger and synthesis refuses every config until
the fence is finished. Runs over any sets of regions (--region) add up: a region is fenced once every old
lane there carries the id. Once every region that may hold old lanes is, the run seals each stopped lane
(returning its final last) and records the epoch. `--undo` puts back what a fence never recorded stopped.
Each stop is one conditional write returning the item as it left it, so the `last` it reads is final: safe
while traffic flows, and safe to repeat.
"""

from __future__ import annotations

import argparse
import secrets
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tickets.epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, fence_above, item_base
from tickets_deploy.ledger import (
    VERSION_DIGITS,
    Change,
    KeyEpoch,
    Ledger,
    LedgerError,
    LedgerFile,
    PendingFence,
    Version,
    fence_refusals,
    layout_changes,
    ledger_path_beside,
    read_ledger_file,
    record_epochs,
    record_services,
    version_id,
    write_ledger_file,
)
from tickets_deploy.schema import DeploymentConfig

from . import fence_lanes
from .registry import Command, Context
from .table import AdminError, CounterTable

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

The ledger records the fence as pending before any lane is stopped: runs over parts of
the regions (--region) add up, and the fence is recorded by the run that leaves no region
unfenced. Until then synthesis refuses every config, naming this command and --undo,
which puts the stopped lanes back (only while the fence was recorded nowhere). Safe while
the service issues tickets, and safe to repeat. It refuses, before writing anything, a
change no fence can make safe (regionSlots down; regionSlots changed while keys nobody
configured may be served: strictKeys must be true), a lane another fence stopped (another
branch changed the layout: merge its ledger first) and a region with no table."""

FENCE_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin fence                      # every region of cdk.json and the ledger
  .venv/bin/python -m tickets_admin fence --region us-east-1   # part of a fence: recorded once every region is fenced
  .venv/bin/python -m tickets_admin fence --undo               # put back what a fence never recorded stopped
  .venv/bin/python -m tickets_admin fence --undo --fence-id 6f1c2a9d0b3e4f57   # one no ledger records any more
  .venv/bin/python -m tickets_admin fence --endpoint-url us-east-1=http://127.0.0.1:8001 \\
      --endpoint-url eu-west-1=http://127.0.0.1:8002"""


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
    fence.add_argument(
        "--undo",
        action="store_true",
        help="undo the fence the ledger records as pending (begun, never recorded): put back every lane it "
        "stopped, in every region; refused once it was recorded anywhere",
    )
    fence.add_argument(
        "--fence-id",
        default=None,
        metavar="ID",
        help="with --undo: the fence to undo when no ledger records it any more (its id, as a refusal names it and "
        "each lane it stopped records it in fencedBy); every region of this ledger's table is read for its lanes",
    )


def _run(args: argparse.Namespace, context: Context) -> int:
    return run_fence(args, context, report=lambda line: print(line, flush=True))


def run_fence(args: argparse.Namespace, context: Context, report: Callable[[str], None]) -> int:
    path = ledger_path_beside(context.config_file)
    file, ledger = _ledger(context, path)
    if args.fence_id is not None and not args.undo:
        raise AdminError("--fence-id names the fence --undo puts back: add --undo")
    if args.undo:
        return _undo(args, context, file, ledger, path, report)
    config = context.config
    changes = _changes(config, file, ledger, path)
    if not changes:
        report(f"nothing to fence: the ledger already records every layout {context.config_file} gives")
        return 0
    needed = _regions_with_old_lanes(ledger)
    regions = args.region or sorted(needed | set(config.regions))
    tables = _tables(context, args, needed, regions)
    pending = ledger.fencing
    # Every region's old lanes are read before any is stopped, a partial run's (--region) too: another region may
    # hold a lane another fence stopped, or lanes that already put the new start above max.
    lanes = fence_lanes.survey(tables, changes, pending.id if pending else None, path)
    _check_max(config, _epochs_now(changes, lanes), _after_refusal(lanes))
    if pending is None:
        pending = PendingFence(secrets.token_hex(VERSION_DIGITS // 2), tuple(changes))
        file = _write(path, file, replace(ledger, fencing=pending), f"fence begun: {pending.describe()}")
    for region in regions:
        if region not in lanes:
            report(f"{region}: no slot in the old layout, so no old lanes: nothing to stop")
            continue
        fence_lanes.stop(lanes[region], pending.id)
        report(f"{region}: stopped the old lanes of {', '.join(change.key for change in changes)}")
    unfenced = [region for region in sorted(lanes) if not lanes[region].stopped_by(pending.id)]
    if unfenced:
        report(
            f"not recorded yet: {', '.join(unfenced)} still to fence (run `{FENCE_COMMAND} --region R` for "
            f"each, or `{FENCE_COMMAND}`); the lanes stopped so far stay stopped (their regions answer 503 "
            f"for the key) until a run leaves no region unfenced, or `{FENCE_UNDO_COMMAND}` puts them back. "
            f"{path} records the fence as pending ({pending.id}): commit it"
        )
        return 0
    return _record(config, file, pending, lanes, path, report)


def _record(
    config: DeploymentConfig,
    file: LedgerFile,
    pending: PendingFence,
    lanes: dict[str, fence_lanes.RegionLanes],
    path: Path,
    report: Callable[[str], None],
) -> int:
    """Seal every stopped lane, reading its final last, and record the epochs above them. The lasts of stopped lanes
    never change again (only an undo could move them), so max is checked on them before any seal: refused, the fence
    can still be undone."""
    _check_max(
        config,
        _epochs_now(list(pending.changes), lanes),
        "the old lanes stay stopped (their regions answer 503 for the key) and the fence stays pending; or "
        f"`{FENCE_UNDO_COMMAND}` puts them back",
    )
    recorded = [
        change.epoch(fence_above(change.old.start, fence_lanes.seal(lanes.values(), change, pending.id)))
        for change in pending.changes
    ]
    service = record_epochs(file.services[config.table_name], recorded)
    change = "fence: " + ", ".join(f"{e.key} above {e.fence} (epoch {e.number})" for e in recorded)
    _write(path, file, service, change)
    for epoch in recorded:
        report(
            f"{epoch.key}: fence {epoch.fence}; epoch {epoch.number} ({epoch.configured.describe()}) starts at "
            f"{epoch.start}"
        )
    report(f"recorded in {path}; now synthesise and deploy (docs/how-to/change-a-layout.md)")
    return 0


def _changes(config: DeploymentConfig, file: LedgerFile, ledger: Ledger, path: Path) -> list[Change]:
    """The layout changes this run makes: a pending fence's, which cdk.json must give, or cdk.json's own, checked
    as a new fence is (nothing written on a refusal)."""
    planned = layout_changes(config, ledger)
    pending = ledger.fencing
    if pending is not None:
        if tuple(planned) != pending.changes:
            given = "; ".join(change.describe() for change in planned) or "no layout change"
            raise AdminError(
                f"{path} records fence {pending.id} as pending ({pending.describe()}), begun and never recorded: the "
                f"lanes it stopped answer 503. cdk.json gives {given} instead. Finish it: give cdk.json those layouts "
                f"and run `{FENCE_COMMAND}`; or undo it: `{FENCE_UNDO_COMMAND}` (it puts the stopped "
                "lanes back). Nothing was written."
            )
        return planned
    problems = fence_refusals(config, ledger)
    if problems:
        raise LedgerError("fence refused, nothing was written:\n" + "\n".join(problems))
    if planned:
        _check_rest(file, config, planned)
        _check_one_account(ledger)
    return planned


def _undo(
    args: argparse.Namespace,
    context: Context,
    file: LedgerFile,
    ledger: Ledger,
    path: Path,
    report: Callable[[str], None],
) -> int:
    """Put back every lane the pending fence (or the fence --fence-id names) stopped, in every region, and forget
    it; refused (before any write) once it was recorded somewhere: a sealed lane, or a lane of the epoch it begins."""
    pending = ledger.fencing
    fence_id = args.fence_id or (pending.id if pending else None)
    if fence_id is None:
        raise AdminError(
            f"{path} records no pending fence: nothing to undo (a recorded fence is never undone; a fence no ledger "
            "records is undone with --fence-id ID)"
        )
    needed = _regions_with_old_lanes(ledger)
    tables = _tables(context, args, needed, sorted(needed))
    if pending is not None and pending.id == fence_id:
        lanes = fence_lanes.survey(tables, list(pending.changes), pending.id, path)
        next_items = [item_base(change.key, change.number) for change in pending.changes]
    else:
        lanes = {region: fence_lanes.stopped_lanes(table, region, fence_id) for region, table in tables.items()}
        next_items = fence_lanes.next_epoch_items(name for each in lanes.values() for name in each.items)
    problems = [problem for each in lanes.values() for problem in fence_lanes.undo_refusals(each, next_items, fence_id)]
    if problems:
        raise AdminError(f"fence {fence_id} cannot be undone; nothing was written:\n" + "\n".join(problems))
    for region, each in sorted(lanes.items()):
        put_back = fence_lanes.unstop(each, fence_id)
        report(f"{region}: put back {', '.join(put_back)}" if put_back else f"{region}: nothing was stopped")
    if pending is not None and pending.id == fence_id:
        _write(path, file, replace(ledger, fencing=None), f"fence undone: {pending.describe()}")
        report(f"fence {fence_id} undone; {path} records no pending fence: commit it")
    else:
        report(f"fence {fence_id} undone ({path} never recorded it)")
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


def _tables(
    context: Context, args: argparse.Namespace, needed: set[str], regions: list[str]
) -> dict[str, CounterTable]:
    """A table per region that may hold old lanes, at its endpoint (--endpoint-url)."""
    endpoints = _endpoints(args.endpoint_url or [], sorted(needed | set(regions)))
    return {region: CounterTable(context.table_name, region, endpoints.get(region)) for region in sorted(needed)}


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


def _check_rest(file: LedgerFile, config: DeploymentConfig, changes: list[Change]) -> None:
    """Refuse, before writing anything, a config the ledger would refuse for another reason than the fence."""
    name = config.table_name
    trial = record_epochs(file.services[name], [change.epoch(change.old.start) for change in changes])
    try:
        record_services(replace(file, services={**file.services, name: trial}), {name: config})
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
            "with). Give each account its own ledger before changing a layout (docs/how-to/change-a-layout.md)"
        )


def _epochs_now(changes: list[Change], lanes: dict[str, fence_lanes.RegionLanes]) -> list[KeyEpoch]:
    """The epochs as the old lanes stand now in every region, read before this run stops any (lanes only grow, so
    the fence found after stopping them is at least this one)."""
    now = []
    for change in changes:
        names = fence_lanes.old_items([change])
        lasts = [
            fence_lanes.final_last(name, item)
            for each in lanes.values()
            for name in names
            if (item := each.items[name]) is not None
        ]
        now.append(change.epoch(fence_above(change.old.start, lasts)))
    return now


def _after_refusal(lanes: dict[str, fence_lanes.RegionLanes]) -> str:
    """What a refusal before any write leaves behind: nothing, or the lanes an earlier run stopped."""
    if any(each.stopped_by_any_fence() for each in lanes.values()):
        return (
            "this run stopped and recorded nothing; the lanes an earlier run stopped stay stopped (their regions "
            f"answer 503 for the key) until a run of fence records the epoch, or `{FENCE_UNDO_COMMAND}` puts "
            "them back"
        )
    return "nothing was stopped or recorded"


def _check_max(config: DeploymentConfig, recorded: list[KeyEpoch], then: str) -> None:
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


def _write(path: Path, file: LedgerFile, service: Ledger, change: str) -> LedgerFile:
    """The ledger file with `service` as its service's new state, one version more (`change` says what), written."""
    services = {**file.services, service.table_name: service}
    parent = file.version
    written = replace(
        file, services=services, versions=(*file.versions, Version(version_id(parent, services), parent, change))
    )
    write_ledger_file(path, written)
    return written


COMMAND = Command(
    "fence",
    "stop the old layout's lanes above a fence in every region and record the epoch in the ledger",
    FENCE_DESCRIPTION,
    FENCE_EPILOG,
    _run,
    _fence_arguments,
    several_regions=True,
)
