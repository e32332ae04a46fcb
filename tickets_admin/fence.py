"""The old lanes of one fence in every region's table, for tickets_admin/commands/fence.py: `survey` reads them all
before anything is written and refuses what a fence must never pass by; `stop`, `seal` and `unstop` are one
conditional write per item (tickets.lane_item)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tickets import epochs, lane_item
from tickets.epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, STOPPED, item_base, items_of
from tickets.lane_item import FENCE_SEALED, LAST, STEP, Item, fenced_by, number
from tickets.tables import COUNTER_KEY
from tickets_deploy.ledger import Change

from .table import ATTEMPTS, AdminError, CounterTable, MissingTable

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

    def stopped_by_any_fence(self) -> bool:
        return any(item is not None and number(item, STEP) == STOPPED for item in self.items.values())


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
        item = table.update(name, lane_item.stop(fence))
        if item is None:
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
            item = lanes.table.update(name, lane_item.seal(fence))
            if item is None:
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
    items: dict[str, Item | None] = {item[COUNTER_KEY]["S"]: item for item in table.scan() if fenced_by(item) == fence}
    return RegionLanes(table, items)


def next_epoch_items(names: Iterable[str]) -> list[str]:
    """The plain item of the epoch after each lane item's (`orders#2` -> `orders@1`, `orders@1` -> `orders@2`)."""
    found = set()
    for name in names:
        key, _, epoch = name.split(epochs.SHARD_SEPARATOR)[0].partition(epochs.EPOCH_SEPARATOR)
        found.add(item_base(key, int(epoch or 0) + 1))
    return sorted(found)


def undo_refusals(lanes: RegionLanes, next_items: list[str], fence: str) -> list[str]:
    """Why `fence` cannot be undone here: a lane it stopped is sealed, or lanes of the epoch it begins exist."""
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
