"""A key's lanes in one region across its epochs (docs/explanation/epochs-and-fences.md), and `raise_key` (`raise`,
`migrate`): an earlier epoch's lane, stopped at its fence, is never raised, but stopped again if a restore undid it."""

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from tickets import lane_item
from tickets.epochs import FENCE_COMMAND, STOPPED, items_of, key_and_epoch
from tickets.lane_item import LAST, STEP, Item, number
from tickets.sequence import Lane, lanes_of
from tickets.settings import CounterConfig, unserved
from tickets_deploy.ledger import Ledger

from ..registry import Command, Context, counter_key, say, whole_number
from ..table import ATTEMPTS, AdminError, CounterTable


class Outcome(Enum):
    RAISED = "raised"
    MADE_LANE = "made a lane"
    ALREADY_ABOVE = "already above"
    MOVED_PAST = "moved past the target meanwhile"
    OFF_LANE = "not changed"


@dataclass(frozen=True)
class KeyLanes:
    current: list[Lane]  # the lanes the deployed function issues from
    every_epoch: list[Lane]  # the earlier epochs' lanes here (none where the region had no slot then), then current
    stopped: list[str]  # every item of the earlier epochs here, a sharded layout's record included: each stays stopped


def key_lanes(key: str, counter: CounterConfig, region_slot: int, region_slots: int, ledger: Ledger | None) -> KeyLanes:
    """`counter` as the region's function runs it (tickets_deploy.ledger.applied), its earlier epochs from `ledger`."""
    earlier: list[Lane] = []
    stopped: list[str] = []
    for epoch in ledger.epochs if ledger is not None else ():
        if epoch.key != key or epoch.number > counter.epoch:
            continue
        old, number = epoch.old, epoch.number - 1
        stopped += items_of(key, number, old.shards)
        if region_slot < old.region_slots:
            config = CounterConfig(start=old.start, stride=old.stride, shards=old.shards, epoch=number)
            earlier += lanes_of(key, config, region_slot, old.region_slots)
    current = lanes_of(key, counter, region_slot, region_slots)
    return KeyLanes(current, earlier + current, stopped)


def next_ticket_above(lane: Lane, above: int) -> int:
    return lane.first if above < lane.first else lane.ticket((above - lane.first) // lane.step + 1)


def raise_key(table: CounterTable, lanes: KeyLanes, above: int, report: Callable[[str], None]) -> list[Outcome]:
    current = lanes.current
    for lane in current:
        if (target := next_ticket_above(lane, above)) > lane.max:
            raise AdminError(
                f"{lane.item_key}: the lane's next ticket above {above} would be {target}, past the counter's max "
                f"({lane.max}); raise max in cdk.json and deploy first. Nothing was written."
            )
    sharded, plain_key = current[0].shards > 1, current[0].plain_key  # `key`, or `key@N` in epoch N
    layout = table.get(plain_key) if sharded else None
    layout_problems = [_problem(current[0], layout, layout=True)] if sharded else []
    if problems := [*filter(None, layout_problems + [_problem(lane, table.get(lane.item_key)) for lane in current])]:
        raise AdminError("\n".join(problems + ["Nothing was written."]))
    for name in lanes.stopped:
        report(_keep_stopped(table, name))
    if sharded and (layout is None or lane_item.missing(layout, lane_item.layout_of(current[0]))):
        # Before any shard item, as the service does: a request with another shard count then fails on it.
        if not table.write(plain_key, lane_item.complete_layout(current[0])):
            raise AdminError(
                _problem(current[0], table.get(plain_key), layout=True)
                or f"{plain_key}: its layout changed meanwhile; run the command again. Nothing was written."
            )
        report(f"{plain_key}: recorded the layout (step {current[0].step}, {current[0].shards} shards)")
    outcomes = []
    for lane in current:
        outcome, line = _raise_lane(table, lane, above)  # the line says what was found and done
        report(line)
        outcomes.append(outcome)
    return outcomes


def _raise_lane(table: CounterTable, lane: Lane, above: int) -> tuple[Outcome, str]:
    name, target_last, raced = f"{lane.item_key} (lane {lane.index})", next_ticket_above(lane, above) - lane.step, False
    for _ in range(ATTEMPTS):
        item = table.get(lane.item_key)
        if problem := _problem(lane, item):
            raise AdminError(f"{problem}\nThe lanes listed above were done; this one and the rest were not.")
        before = number(item, LAST)
        was = "unused" if before is None else f"last {before}"
        if item is None:
            if target_last <= lane.seed:  # its first ticket is above the target
                return (Outcome.ALREADY_ABOVE, f"{name}: already above: {was}, next ticket {lane.first}")
            outcome, after, request = Outcome.RAISED, target_last, lane_item.create(lane, target_last)
        elif LAST in item and before is None:
            return (
                Outcome.OFF_LANE,
                f"{name}: NOT CHANGED: last {json.dumps(item[LAST])} is not a whole number; the service refuses to "
                "issue from it until the item is fixed by hand",
            )
        elif lane_item.missing(item, lane_item.LANE) or (before is not None and not lane.accepts_last(before)):
            # Not a lane yet, or off it: what it issued is at most its `last`, so go above that too.
            after = next_ticket_above(lane, above if before is None else max(above, before)) - lane.step
            outcome, request = Outcome.MADE_LANE, lane_item.put_on_lane(lane, before, after)
        elif before is not None and before >= target_last:
            if raced:
                return (Outcome.MOVED_PAST, f"{name}: moved past the target meanwhile ({was}); left alone")
            return (Outcome.ALREADY_ABOVE, f"{name}: already above: {was}, next ticket {before + lane.step}")
        else:
            outcome, after, request = Outcome.RAISED, target_last, lane_item.raise_last(lane, target_last)
        if table.write(lane.item_key, request):
            made = f", now a lane (first {lane.first}, step {lane.step})" if outcome is Outcome.MADE_LANE else ""
            return (outcome, f"{name}: {was} -> last {after}{made}; next ticket {after + lane.step}")
        raced = True  # the service wrote first: read again
    raise AdminError(f"{lane.item_key}: the item kept changing under {ATTEMPTS} attempts; run the command again")


def _keep_stopped(table: CounterTable, name: str) -> str:
    """Stop (and seal) an earlier epoch's item that a restore from before its fence brought back or dropped."""
    epoch = key_and_epoch(name)[1]
    for _ in range(ATTEMPTS):
        item = table.get(name)
        if item is not None and number(item, STEP) == STOPPED:
            if lane_item.fenced_by(item) == RESTOPPED_BY and lane_item.FENCE_SEALED not in item:
                table.write(name, lane_item.seal(RESTOPPED_BY))  # a run cut off between its two writes
            return f"{name}: stopped at a fence (epoch {epoch}); left alone"
        stop = lane_item.stop(RESTOPPED_BY) if item is not None and STEP in item else None
        if table.write(name, stop or lane_item.stop_unwritten(RESTOPPED_BY)):
            table.write(name, lane_item.seal(RESTOPPED_BY))
            if item is None:
                return f"{name}: absent (a restore from before its fence dropped it): written stopped (epoch {epoch})"
            return f"{name}: not stopped (a restore from before its fence brought it back): stopped again"
    raise AdminError(f"{name}: the item kept changing under {ATTEMPTS} attempts; run the command again")


RESTOPPED_BY = "raise-after-restore"  # fencedBy of a lane stopped again after a restore, sealed: never put back


def _problem(lane: Lane, item: Item | None, layout: bool = False) -> str | None:
    """Why this stored lane item (`layout`: a sharded key's plain item) is not the configured one, or None."""
    if item is None:
        return None
    if number(item, STEP) == STOPPED:  # the layout changed after the ledger this config is checked against
        return (
            f"{lane.plain_key if layout else lane.item_key} was stopped at a fence the ledger beside --config does not "
            f"record yet: finish {lane.key}'s layout change with `{FENCE_COMMAND}`, then raise the new layout's lanes"
        )
    changed = (lane_item.layout_contradiction if layout else lane_item.contradiction)(lane, item)
    return (
        f"{changed}; check --config and --region, or the config changed after tickets were issued" if changed else None
    )


TEXT = """\
make every lane of KEY in this region next issue its smallest ticket above N

After a point-in-time restore: above the highest ticket issued before it. From another
counter: above its value plus a margin before pointing callers at Tickets, then again above
its final value once it has stopped (docs/how-to/restore.md, docs/how-to/migrate.md). It
never lowers a lane; it writes nothing if a stored lane disagrees with cdk.json or N is past
max. Exit status 1 if a lane needs a fix by hand. After a fence: the latest epoch's lanes.

examples:
  .venv/bin/python -m tickets_admin raise orders --above 120000
  .venv/bin/python -m tickets_admin raise orders --above 120000 --region eu-west-1 --table shop-tickets"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", type=counter_key, help="the counter")
    parser.add_argument("--above", required=True, metavar="N", type=whole_number, help="a whole number, 0 or more")


def _raise(args: argparse.Namespace, context: Context) -> int:
    table = context.counter_table()
    context.check_ledger()
    settings = context.settings()
    if (counter := settings.counter(args.key)) is None:
        raise AdminError(
            f"{args.key!r} is not configured: {unserved(args.key, str(context.config_file))}: add it to "
            "tickets.counters there first"
        )
    lanes = key_lanes(args.key, counter, settings.region_slot, settings.region_slots, context.ledger)
    epoch = f" (epoch {counter.epoch}, above its fence at {counter.fence})" if counter.epoch else ""
    say(
        f"raising {args.key}{epoch} above {args.above} in {context.region} (slot {settings.region_slot} of "
        f"{settings.region_slots}), table {table.table}: {len(lanes.current)} lane(s)"
    )
    return 1 if Outcome.OFF_LANE in raise_key(table, lanes, args.above, say) else 0


COMMANDS = (Command("raise", TEXT, _raise, _arguments),)
