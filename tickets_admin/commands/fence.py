import argparse
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tickets import epochs, lane_item
from tickets.epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, STOPPED, fence_above, item_base, items_of
from tickets.lane_item import FENCE_SEALED, LAST, STEP, Item, fenced_by, number
from tickets.tables import COUNTER_KEY
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
    read_ledger_file,
    record_epochs,
    record_services,
    version_id,
    write_ledger_file,
)
from tickets_deploy.schema import DeploymentConfig

from ..registry import Command, Context, say
from ..table import ATTEMPTS, AdminError, CounterTable, MissingTable

TEXT = """\
stop the old layout's lanes above a fence in every region and record the epoch in the ledger

After cdk.json changes a live layout (regionSlots, shards, stride, a counter for a key served
unconfigured): stops the old lanes in every region and records in the ledger the fence above
their final lasts and the new layout; then synthesise and deploy. Pending until no region is
unfenced (--region runs add up); --undo puts its lanes back until then. Safe to repeat; it
refuses before any write what a fence cannot make safe (docs/how-to/change-a-layout.md).

examples:
  .venv/bin/python -m tickets_admin fence                      # every region of cdk.json and the ledger
  .venv/bin/python -m tickets_admin fence --region us-east-1   # part of a fence: recorded once every region is fenced
  .venv/bin/python -m tickets_admin fence --undo               # put back what a fence never recorded stopped
  .venv/bin/python -m tickets_admin fence --undo --fence-id 6f1c2a9d0b3e4f57   # one no ledger records any more"""


_MERGE_FIRST = (
    "Merge that line's ledger first (`git checkout BRANCH -- tickets.lock.json`, keep your cdk.json, synthesise), "
    "then run fence again (docs/how-to/work-as-a-team.md)"
)


@dataclass
class RegionLanes:
    table: CounterTable
    items: dict[str, Item | None]

    def stopped_by(self, fence: str) -> bool:
        return all(item is not None and fenced_by(item) == fence for item in self.items.values())


Survey = dict[str, RegionLanes]  # by region


def old_items(changes: Iterable[Change]) -> list[str]:
    return [name for change in changes for name in items_of(change.key, change.number - 1, change.old.shards)]


def survey(tables: dict[str, CounterTable], changes: Sequence[Change], fence: str | None, ledger_path: Path) -> Survey:
    """Every region's old lanes, before any write; refused where a foreign fence (not `fence`) stopped one."""
    found = {}
    for region, table in sorted(tables.items()):
        items = {name: _read(table, name) for name in old_items(changes)}
        for name, item in items.items():
            if item is not None and number(item, STEP) == STOPPED and fenced_by(item) != fence:
                raise AdminError(_foreign_stop(region, name, item, ledger_path))
        for change in changes if fence is None else ():  # a new fence: its epoch has no lanes yet
            name = item_base(change.key, change.number)
            if _read(table, name) is not None:
                raise AdminError(
                    f"{region}: {name} exists: another line of history (a branch) deployed epoch {change.number} of "
                    f"{change.key}, which {ledger_path} lacks. {_MERGE_FIRST}. Nothing was stopped or recorded."
                )
        found[region] = RegionLanes(table, items)
    return found


def _foreign_stop(region: str, name: str, item: Item, ledger_path: Path) -> str:
    other = fenced_by(item)
    which = f"fence {other}" if other else "a fence that recorded no id"
    return (
        f"{region}: {name} was stopped by {which}, which {ledger_path} does not record: another line of history "
        f"changed its layout, and two lines' fences would repeat each other's tickets. {_MERGE_FIRST}. An abandoned "
        f"fence: finish or undo it where it began; if no ledger records it, `{FENCE_UNDO_COMMAND} --fence-id "
        f"{other or 'ID'}` puts its lanes back. Nothing was stopped or recorded."
    )


def _read(table: CounterTable, name: str) -> Item | None:
    try:
        return table.get(name)
    except MissingTable as err:
        raise AdminError(
            f"{table.region}: {err}. A region recorded (synthesised) but never deployed has no table yet, and could "
            "later get the old layout: deploy it first (`git stash`, `make deploy`, `git stash pop`), then run fence "
            "again; or name its table (--table, --endpoint-url REGION=URL). Nothing was stopped or recorded."
        ) from None
    except AdminError as err:
        raise AdminError(
            f"{err}. fence reads every region that ever had a slot before it stops any, with --region too "
            "(--endpoint-url REGION=URL); nothing was stopped"
        ) from None


def stop(lanes: RegionLanes, fence: str) -> None:
    """Stop every old lane here that `fence` has not stopped yet; `lanes.items` as each write left it."""
    for name, item in lanes.items.items():
        if item is None or fenced_by(item) != fence:
            lanes.items[name] = _stop(lanes.table, name, fence)


def _stop(table: CounterTable, name: str, fence: str) -> Item:
    for _ in range(ATTEMPTS):
        if (item := table.update(name, lane_item.stop(fence))) is None:
            item = table.get(name)
            if item is not None and number(item, STEP) == STOPPED:
                if fenced_by(item) != fence:  # another fence, since the survey: refuse, as it would have
                    raise AdminError(_foreign_stop(table.region, name, item, Path("this ledger")))
                return item
            item = table.update(name, lane_item.stop_unwritten(fence))
        if item is not None:
            return item
    raise AdminError(f"{name}: the item kept changing shape under {ATTEMPTS} attempts; run the command again")


def seal(regions: Iterable[RegionLanes], change: Change, fence: str) -> list[int | None]:
    """Seal `change`'s lanes in every region (never undone then); their final lasts as the seal read them."""
    lasts = []
    for lanes in regions:
        for name in old_items([change]):
            if (item := lanes.table.update(name, lane_item.seal(fence))) is None:
                raise AdminError(
                    f"{lanes.table.region}: {name} is no longer stopped by fence {fence} (`{FENCE_UNDO_COMMAND}` ran "
                    f"meanwhile): run `{FENCE_COMMAND}` again"
                )
            lasts.append(final_last(name, item))
    return lasts


def final_last(name: str, item: Item) -> int | None:
    if LAST in item and number(item, LAST) is None:
        raise AdminError(f"{name}: its last is not a whole number ({item[LAST]}); fix it by hand, then run fence again")
    return number(item, LAST)


def stopped_lanes(table: CounterTable, fence: str) -> RegionLanes:
    return RegionLanes(table, {item[COUNTER_KEY]["S"]: item for item in table.scan() if fenced_by(item) == fence})


def next_epoch_items(names: Iterable[str]) -> list[str]:
    """The plain item of the epoch after each lane item's (`orders#2` -> `orders@1`, `orders@1` -> `orders@2`)."""
    found = set()
    for name in names:
        key, epoch = epochs.key_and_epoch(name)
        found.add(item_base(key, epoch + 1))
    return sorted(found)


def undo_refusals(lanes: RegionLanes, next_items: list[str], fence: str) -> list[str]:
    problems = []
    sealed = [name for name, item in lanes.items.items() if item and fenced_by(item) == fence and FENCE_SEALED in item]
    if sealed:
        problems.append(
            f"{lanes.table.region}: {', '.join(sealed)}: fence {fence} was recorded (its lanes are sealed) by another "
            f"run: run `{FENCE_COMMAND}` where the ledger records it pending, to record it there too"
        )
    for name in next_items:
        if _read(lanes.table, name) is not None:
            problems.append(
                f"{lanes.table.region}: {name} exists: the epoch fence {fence} begins was deployed: run "
                f"`{FENCE_COMMAND}` to record it here"
            )
    return problems


def unstop(lanes: RegionLanes, fence: str) -> list[str]:
    put_back = []
    for name, item in lanes.items.items():
        if item is None or fenced_by(item) != fence:
            continue
        request = lane_item.unstop(fence, item)
        write = lanes.table.write if "UpdateExpression" in request else lanes.table.delete  # created by the stop
        if not write(name, request):
            raise AdminError(
                f"{lanes.table.region}: {name} changed while it was put back (another run of fence?): run "
                f"`{FENCE_UNDO_COMMAND}` again, or `{FENCE_COMMAND}` to finish the fence"
            )
        put_back.append(name)
    return put_back


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", action="append", metavar="R", help="only R (repeatable; default: every region)")
    parser.add_argument("--endpoint-url", action="append", metavar="[REGION=]URL", help="repeatable, one a region")
    parser.add_argument("--undo", action="store_true", help="put back the pending fence's lanes, recorded nowhere")
    parser.add_argument("--fence-id", metavar="ID", help="with --undo: the fence when no ledger records it")


def _fence(args: argparse.Namespace, context: Context) -> int:
    if context.from_ledger:
        raise AdminError("fence compares an edited cdk.json with the ledger: run it with --config, not --service")
    path = context.ledger_path()
    file = read_ledger_file(path)
    if (ledger := file.services.get(context.config.table_name)) is None:
        raise AdminError(f"{path} records no service {context.config.table_name!r}: synthesise it first")
    if args.fence_id is not None and not args.undo:
        raise AdminError("--fence-id names the fence --undo puts back: add --undo")
    if args.undo:
        return _undo(args, context, file, ledger, path)
    config = context.config
    changes = _changes(config, file, ledger, path)
    if not changes:
        say(f"nothing to fence: the ledger already records every layout {context.config_file} gives")
        return 0
    tables = _tables(context, args, ledger)
    regions = args.region or sorted(set(tables) | set(config.regions))
    pending = ledger.fencing
    # Every region is read before any is stopped, with --region too: another may hold a foreign stop, or lanes past max.
    lanes = survey(tables, changes, pending.id if pending else None, path)
    _check_max(config, changes, lanes, _after_refusal(lanes))
    if pending is None:
        pending = PendingFence(secrets.token_hex(VERSION_DIGITS // 2), tuple(changes))
        file = _write(path, file, replace(ledger, fencing=pending), f"fence begun: {pending.describe()}")
    for region in regions:
        if region not in lanes:
            say(f"{region}: no slot in the old layout, so no old lanes: nothing to stop")
            continue
        stop(lanes[region], pending.id)
        say(f"{region}: stopped the old lanes of {', '.join(change.key for change in changes)}")
    if unfenced := [region for region in sorted(lanes) if not lanes[region].stopped_by(pending.id)]:
        say(
            f"not recorded yet: {', '.join(unfenced)} still to fence (`{FENCE_COMMAND} [--region R]`); stopped lanes "
            f"answer 503 meanwhile, or `{FENCE_UNDO_COMMAND}`. {path} records it pending ({pending.id}): commit it"
        )
        return 0
    return _record(config, file, pending, lanes, path)


def _record(config: DeploymentConfig, file: LedgerFile, pending: PendingFence, lanes: Survey, path: Path) -> int:
    """Seal every stopped lane, reading its final last, and record the epochs above them; max is checked first, on
    lasts only an undo could move, so that a refusal leaves the fence still undoable."""
    then = f"the fence stays pending, its lanes answering 503; or `{FENCE_UNDO_COMMAND}` puts them back"
    _check_max(config, pending.changes, lanes, then)
    recorded: list[KeyEpoch] = [
        change.epoch(fence_above(change.old.start, seal(lanes.values(), change, pending.id)))
        for change in pending.changes
    ]
    service = record_epochs(file.services[config.table_name], recorded)
    change = "fence: " + ", ".join(f"{e.key} above {e.fence} (epoch {e.number})" for e in recorded)
    _write(path, file, service, change)
    for epoch in recorded:
        say(
            f"{epoch.key}: fence {epoch.fence}; epoch {epoch.number} ({epoch.configured.describe()}) starts at "
            f"{epoch.start}"
        )
    say(f"recorded in {path}; now synthesise and deploy (docs/how-to/change-a-layout.md)")
    return 0


def _changes(config: DeploymentConfig, file: LedgerFile, ledger: Ledger, path: Path) -> list[Change]:
    planned = layout_changes(config, ledger)
    pending = ledger.fencing
    if pending is not None:
        if tuple(planned) != pending.changes:
            given = "; ".join(change.describe() for change in planned) or "no layout change"
            raise AdminError(
                f"{path} records fence {pending.id} as pending ({pending.describe()}), but cdk.json gives {given}: "
                f"give it those layouts and run `{FENCE_COMMAND}`, or `{FENCE_UNDO_COMMAND}`. Nothing was written."
            )
        return planned
    if problems := fence_refusals(config, ledger):
        raise LedgerError("fence refused, nothing was written:\n" + "\n".join(problems))
    if planned:
        _check_new_fence(file, config, planned)
    return planned


def _undo(args: argparse.Namespace, context: Context, file: LedgerFile, ledger: Ledger, path: Path) -> int:
    """Put back every lane the pending fence (or --fence-id's) stopped, and forget it; refused once recorded."""
    pending = ledger.fencing
    fence_id = args.fence_id or (pending.id if pending else None)
    if fence_id is None:
        raise AdminError(f"{path} records no pending fence: nothing to undo (a fence no ledger records: --fence-id ID)")
    tables, own = _tables(context, args, ledger), pending if pending and pending.id == fence_id else None
    if own:
        lanes = survey(tables, own.changes, own.id, path)
        next_items = [item_base(change.key, change.number) for change in own.changes]
    else:
        lanes = {region: stopped_lanes(table, fence_id) for region, table in tables.items()}
        next_items = next_epoch_items(name for each in lanes.values() for name in each.items)
    if problems := [problem for each in lanes.values() for problem in undo_refusals(each, next_items, fence_id)]:
        raise AdminError(f"fence {fence_id} cannot be undone; nothing was written:\n" + "\n".join(problems))
    for region, each in sorted(lanes.items()):
        put_back = unstop(each, fence_id)
        say(f"{region}: put back {', '.join(put_back)}" if put_back else f"{region}: nothing was stopped")
    if own:
        _write(path, file, replace(ledger, fencing=None), f"fence undone: {own.describe()}")
        say(f"fence {fence_id} undone; {path} records no pending fence: commit it")
    else:
        say(f"fence {fence_id} undone ({path} never recorded it)")
    return 0


def _tables(context: Context, args: argparse.Namespace, ledger: Ledger) -> dict[str, CounterTable]:
    """A table per region the ledger ever gave a slot (retired ones hold old lanes too), at its --endpoint-url."""
    regions = sorted({entry.region for entry in ledger.slots.values()})
    endpoints: dict[str, str] = {}
    for each in args.endpoint_url or []:
        region, equals, url = each.partition("=")
        if not equals or "://" in region:
            endpoints.update(dict.fromkeys(regions, each))
        else:
            endpoints[region] = url
    return {region: CounterTable(context.table_name, region, endpoints.get(region)) for region in regions}


def _check_new_fence(file: LedgerFile, config: DeploymentConfig, changes: list[Change]) -> None:
    """Refuse, before any write, a config the ledger refuses for another reason, and a ledger of several accounts:
    fence stops one account's lanes, and the epoch it records would let another's new lanes repeat its old ones."""
    name = config.table_name
    trial = record_epochs(file.services[name], [change.epoch(change.old.start) for change in changes])
    try:
        record_services(replace(file, services={**file.services, name: trial}), {name: config})
    except LedgerError as err:
        raise LedgerError(f"fence refused, nothing was written: cdk.json has other problems:\n{err}") from None
    accounts = sorted({account for slot in file.services[name].slots.values() for account in slot.accounts})
    if len(accounts) > 1:
        raise LedgerError(
            f"fence refused, nothing was written: the ledger records tables in {len(accounts)} accounts "
            f"({', '.join(accounts)}). Give each account its own ledger first (docs/how-to/change-a-layout.md)"
        )


def _after_refusal(lanes: Survey) -> str:
    if any(number(item, STEP) == STOPPED for each in lanes.values() for item in each.items.values()):
        return (
            "this run wrote nothing; the lanes an earlier run stopped stay stopped (answering 503) until fence records "
            f"the epoch, or `{FENCE_UNDO_COMMAND}` puts them back"
        )
    return "nothing was stopped or recorded"


def _check_max(config: DeploymentConfig, changes: Sequence[Change], lanes: Survey, then: str) -> None:
    """A new layout must begin at or below max: checked before any stop (lanes only grow), and on final lasts."""
    for change in changes:
        lasts = [
            final_last(name, item)
            for each in lanes.values()
            for name in old_items([change])
            if (item := each.items[name]) is not None
        ]
        epoch, counter = change.epoch(fence_above(change.old.start, lasts)), config.counters.get(change.key)
        if counter is not None and epoch.start > counter.max:
            raise AdminError(
                f"counters.{epoch.key}: its new layout would start at {epoch.start}, above max ({counter.max}); "
                f"raise max in cdk.json and run fence again ({then})"
            )


def _write(path: Path, file: LedgerFile, service: Ledger, change: str) -> LedgerFile:
    services = {**file.services, service.table_name: service}
    version = Version(version_id(file.version, services), file.version, change)
    written = replace(file, services=services, versions=(*file.versions, version))
    write_ledger_file(path, written)
    return written


COMMANDS = (Command("fence", TEXT, _fence, _arguments, one_region=False),)
