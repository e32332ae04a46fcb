"""`tickets_admin migrate`: carry the values of an API Gateway + DynamoDB atomic-counter table over to
Tickets, so that callers moved to Tickets get numbers above every number the old counter gave.

It reads the old table (a consistent, paginated Scan: one item per counter, its name in one attribute
and its last value in another) and raises each named Tickets counter above the old value plus a
margin, through `raise_key`: the same conditional writes, refusals and never-lowering as `raise`. It
writes nothing to the old table. A key the old table names twice is raised above the larger value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from tickets.errors import clip
from tickets.keys import KEY_RULE, is_valid_key
from tickets.lane_item import LAST, Item, number
from tickets.sequence import Lane
from tickets.settings import Settings, unserved
from tickets.tables import COUNTER_KEY, RESERVED_ITEM_PREFIX
from tickets_deploy.ledger import Ledger

from .key_lanes import KeyLanes, key_lanes
from .operations import LaneResult, Outcome, raise_key
from .table import AdminError, CounterTable

MIGRATE_DESCRIPTION = (
    """\
Read an old counter table (the API Gateway + DynamoDB atomic-counter pattern: one item
per counter, its name in --key-attribute and its last value in --value-attribute) in
--from-region and raise each named Tickets counter in this region above the old value
plus --margin, as `raise KEY --above VALUE+MARGIN` would: every lane of the key next
issues a ticket greater than that, no lane is ever lowered, and nothing is written to
the old table.

The first run that raises a key records that target (old value + margin) in the
Tickets table, as an item named "_migration#KEY" that is no counter (no key starts
with "_"; export skips it); it is never replaced. A later run, and --verify, compare
the old counter's current value with it: past it, the old callers took numbers
Tickets issues too, and the key is named with those numbers ("OVERLAP"). A key that
appeared in the old table after the first run is named as new (a later run raises
it, --verify reports it). It is safe to repeat: a later run raises nothing it
already raised.

It prints one line per key: "raised" (each lane's last before -> after and its next
ticket), "already above" (nothing written), "would raise" (--dry-run: nothing
written), "OVERLAP" (the old counter passed the recorded target), or "NOT MIGRATED"
(why: e.g. the target would pass the counter's max, or strictKeys is on and cdk.json
does not configure the key). An item whose key attribute is missing, not a string, or
not a Tickets key
("""
    + KEY_RULE
    + """),
or whose value is missing or not a whole number (0 or more), is listed as "skipped",
never dropped silently. A last line counts what was done.

Exit status 0 when every item was migrated (raised or already above) and no key
overlaps; 1 when an item was skipped, a key was not migrated or overlaps its target
(the other keys were still done), or on an error such as a missing table. With
--verify: 0 only when every key is within its recorded target.

The safe order, while old callers still count on the old table, in each Tickets
region (--region; --from-region names the old table's):
  1. migrate with a margin bigger than the numbers the old counters will hand out
     until step 2 is done; it records each key's target;
  2. switch the callers to Tickets (the compatibility route in docs/how-to/migrate.md);
  3. migrate --verify: exit 0 says no old caller passed its key's target; otherwise
     it names each key and the numbers issued twice. Then migrate again (any margin)
     to raise the keys the old callers created after step 1."""
)

MIGRATE_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin migrate --from-table counters --key-attribute systemKey \\
      --value-attribute counter --margin 100000 --dry-run
  .venv/bin/python -m tickets_admin migrate --from-table counters --from-region us-east-1 \\
      --key-attribute systemKey --value-attribute counter --margin 100000 --region eu-west-1
  .venv/bin/python -m tickets_admin migrate --from-table counters --key-attribute systemKey \\
      --value-attribute counter --verify"""


@dataclass(frozen=True)
class OldCounters:
    """What the old table holds: each valid key's highest value, and the items that name none."""

    values: dict[str, int]
    skipped: list[str]  # one line each: which item, and why


def read_old_counters(items: Iterable[Item], key_attribute: str, value_attribute: str) -> OldCounters:
    values: dict[str, int] = {}
    skipped: list[str] = []
    for item in items:
        key, value = item.get(key_attribute), item.get(value_attribute)
        which = (
            f"{key_attribute} {clip(json.dumps(key))}"
            if key is not None
            else f"an item without {key_attribute}: {clip(json.dumps(item, sort_keys=True), 200)}"
        )
        name = key.get("S") if key is not None else None
        number = _whole_number(value)
        if not is_valid_key(name):
            skipped.append(f"skipped {which}: not a valid key (a string of {KEY_RULE})")
        elif number is None:
            skipped.append(
                f"skipped {which}: its {value_attribute} is "
                f"{'missing' if value is None else clip(json.dumps(value))}, not a whole number (0 or more)"
            )
        else:
            values[name] = max(number, values.get(name, number))
    return OldCounters(dict(sorted(values.items())), skipped)


def _whole_number(value: dict[str, str] | None) -> int | None:
    """A DynamoDB number that is a whole number, 0 or more (however it is written, e.g. 1E+3); else None."""
    if value is None or "N" not in value:
        return None
    try:
        number = Decimal(value["N"])
    except InvalidOperation:
        return None
    if not number.is_finite() or number < 0 or number != number.to_integral_value():
        return None
    return int(number)


class DryRunTable(CounterTable):
    """The counter table, read for real, with every write answered "done" and not sent: `raise_key`
    then decides and reports exactly what it would write."""

    def write(self, item_key: str, request: dict[str, Any]) -> bool:
        return True


# The records a migration keeps in the Tickets counter table (not counters: tables.is_counter_item).
MIGRATION_RUN_ITEM = f"{RESERVED_ITEM_PREFIX}migration"  # the first run: when, and from which table
MIGRATION_ITEM_PREFIX = f"{RESERVED_ITEM_PREFIX}migration#"  # + KEY: the target its first run raised KEY above


@dataclass(frozen=True)
class Source:
    """The old counter table, where it lives."""

    table: str
    region: str


@dataclass(frozen=True)
class Target:
    """What the first run that raised a key recorded: Tickets' lanes were raised above `target`, so the
    old callers may take numbers up to `target` and no higher."""

    key: str
    target: int
    old_value: int
    margin: int
    at: str

    def describe(self) -> str:
        return f"{self.target} (old value {self.old_value} + margin {self.margin}, recorded {self.at})"


def read_target(table: CounterTable, key: str) -> Target | None:
    item = table.get(MIGRATION_ITEM_PREFIX + key)
    if item is None:
        return None
    target, old_value, margin = (number(item, name) for name in ("target", "oldValue", "margin"))
    if target is None or old_value is None or margin is None or "at" not in item:
        raise AdminError(
            f"{MIGRATION_ITEM_PREFIX + key}: a migration record without a whole target, oldValue and margin; "
            "it was edited by hand: restore it from a backup (a point-in-time restore of the table)"
        )
    return Target(key, target, old_value, margin, item["at"]["S"])


def _record(table: CounterTable, item_key: str, values: dict[str, int | str]) -> None:
    """Write a record once: a later run never replaces what the first recorded."""
    names = {f"#a{i}": name for i, name in enumerate(values)}
    table.write(
        item_key,
        {
            "UpdateExpression": "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(values))),
            "ConditionExpression": "attribute_not_exists(#counter)",
            "ExpressionAttributeNames": {"#counter": COUNTER_KEY, **names},
            "ExpressionAttributeValues": {
                f":a{i}": {"N": str(value)} if isinstance(value, int) else {"S": value}
                for i, value in enumerate(values.values())
            },
        },
    )


def _first_run(table: CounterTable) -> str | None:
    """When the first run into this table was, or None if there was none."""
    item = table.get(MIGRATION_RUN_ITEM)
    return None if item is None else item.get("at", {}).get("S", "an unknown time")


def _issued_between(table: CounterTable, lanes: list[Lane], low: int, high: int) -> tuple[int, int, int] | None:
    """(how many, lowest, highest) of the tickets this region's lanes (of every epoch: KeyLanes.every_epoch) have
    issued (up to each lane's stored last) in low+1 .. high; None if none."""
    count, lowest, highest = 0, None, None
    for lane in lanes:
        last = number(table.get(lane.item_key), LAST)
        top = min(high, last) if last is not None else lane.first - 1
        k_low = 0 if low < lane.first else (low - lane.first) // lane.step + 1
        k_high = (top - lane.first) // lane.step if top >= lane.first else -1
        if k_high < k_low:
            continue
        count += k_high - k_low + 1
        lowest = min(lowest if lowest is not None else lane.ticket(k_low), lane.ticket(k_low))
        highest = max(highest if highest is not None else lane.ticket(k_high), lane.ticket(k_high))
    return None if count == 0 or lowest is None or highest is None else (count, lowest, highest)


def _overlap(table: CounterTable, lanes: KeyLanes, region: str, target: Target, value: int) -> str:
    taken = f"the old callers took {target.target + 1} .. {value}, above the target {target.describe()}"
    issued = _issued_between(table, lanes.every_epoch, target.target, value)
    if issued is None:
        return f"{taken}; Tickets has issued none of those numbers in {region} yet, but its next ones are among them"
    count, lowest, highest = issued
    return f"{taken}; Tickets has issued {count} of those numbers in {region} ({lowest} .. {highest}): each twice"


def migrate(
    table: CounterTable,
    settings: Settings,
    old: OldCounters,
    margin: int,
    *,
    source: Source,
    region: str,
    dry_run: bool = False,
    report: Callable[[str], None] = print,
    ledger: Ledger | None = None,
) -> bool:
    """Raise each old key's Tickets counter above its old value + `margin`, one report line per key
    and per skipped item, then a count; True if every item was migrated and no key overlaps. The first
    run that raises a key records its target (Target); a later run compares the old value with it and
    reports an overlap, and names the keys new in the old table since the first run. A key whose layout changed
    above a fence is raised in its current epoch (the `ledger` records its epochs: tickets_admin/key_lanes.py)."""
    counts = {"raised": 0, "already above": 0, "not migrated": 0, "skipped": len(old.skipped), "overlap": 0}
    first_run = _first_run(table)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for key, value in old.values.items():
        above = value + margin
        target = f"{above} (old value {value} + margin {margin})"
        counter = settings.counter(key)
        if counter is None:
            report(
                f"{key}: NOT MIGRATED: {unserved(key, 'cdk.json')}: add it to tickets.counters there, then migrate "
                "again"
            )
            counts["not migrated"] += 1
            continue
        lanes = key_lanes(key, counter, settings.region_slot, settings.region_slots, ledger)
        recorded = read_target(table, key)
        if recorded is not None and value > recorded.target:
            report(f"{key}: OVERLAP: {_overlap(table, lanes, region, recorded, value)}")
            counts["overlap"] += 1
        lines: list[str] = []
        try:
            results = raise_key(table, key, lanes.current, above, report=lines.append, stopped=lanes.stopped)
        except AdminError as err:
            report(f"{key}: NOT MIGRATED: not raised above {target}: {' '.join(str(err).splitlines())}")
            counts["not migrated"] += 1
            continue
        outcome = _outcome(results)
        verb = {
            "raised": "would raise above" if dry_run else "raised above",
            "already above": "already above",
            "not migrated": "NOT MIGRATED: not raised above",
        }[outcome]
        new = f" (new in the old table since the first run, {first_run})" if recorded is None and first_run else ""
        report(f"{key}{new}: {verb} {target}: {'; '.join(lines)}")
        counts[outcome] += 1
        if recorded is None and outcome != "not migrated" and not dry_run:
            _record(
                table, MIGRATION_ITEM_PREFIX + key, {"target": above, "oldValue": value, "margin": margin, "at": now}
            )
    for line in old.skipped:
        report(line)
    if first_run is None and not dry_run:
        _record(table, MIGRATION_RUN_ITEM, {"fromTable": source.table, "fromRegion": source.region, "at": now})
    done = "would raise" if dry_run else "raised"
    report(
        f"{len(old.values)} key(s): {counts['raised']} {done}, {counts['already above']} already above, "
        f"{counts['not migrated']} not migrated"
        + (f", {counts['overlap']} past their recorded target" if counts["overlap"] else "")
        + f"; {counts['skipped']} item(s) skipped"
        + ("; dry run: nothing was written" if dry_run else "")
    )
    return counts["not migrated"] == 0 and counts["skipped"] == 0 and counts["overlap"] == 0


def verify(
    table: CounterTable,
    settings: Settings,
    old: OldCounters,
    *,
    region: str,
    report: Callable[[str], None] = print,
    ledger: Ledger | None = None,
) -> bool:
    """Compare each old key's current value with the target its first migrate run recorded; write
    nothing. True if no old caller passed its key's target and every key was migrated."""
    first_run = _first_run(table)
    if first_run is None:
        report(f"no migrate run is recorded in table {table.table}: run migrate (without --verify) first")
        return False
    counts = {"within": 0, "overlap": 0, "new": 0, "not served": 0}
    for key, value in old.values.items():
        counter = settings.counter(key)
        if counter is None:
            report(f"{key}: NOT SERVED: {unserved(key, 'cdk.json')}")
            counts["not served"] += 1
            continue
        lanes = key_lanes(key, counter, settings.region_slot, settings.region_slots, ledger)
        recorded = read_target(table, key)
        if recorded is None:
            issued = _issued_between(table, lanes.every_epoch, -1, value)
            said = (
                "Tickets has issued none of the numbers up to it here"
                if issued is None
                else f"Tickets has issued {issued[0]} of the numbers up to it in {region} "
                f"({issued[1]} .. {issued[2]}): each twice"
            )
            report(
                f"{key}: NEW in the old table since the first run ({first_run}), at {value}, never migrated: "
                f"{said}. Run migrate (without --verify) to raise it"
            )
            counts["new"] += 1
        elif value > recorded.target:
            report(f"{key}: OVERLAP: {_overlap(table, lanes, region, recorded, value)}")
            counts["overlap"] += 1
        else:
            report(f"{key}: within its target: the old counter is at {value}, the target {recorded.describe()}")
            counts["within"] += 1
    for line in old.skipped:
        report(line)
    report(
        f"{len(old.values)} key(s): {counts['within']} within their target, {counts['overlap']} overlapping it, "
        f"{counts['new']} new since the first run, {counts['not served']} not served; "
        f"{len(old.skipped)} item(s) skipped; nothing was written"
    )
    return counts["within"] == len(old.values) and not old.skipped


def _outcome(results: list[LaneResult]) -> str:
    if any(result.needs_attention for result in results):
        return "not migrated"  # the lane lines say which stored value needs a fix by hand
    if any(result.outcome is Outcome.RAISED for result in results):
        return "raised"
    return "already above"
