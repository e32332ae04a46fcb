import argparse
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from tickets.errors import clip
from tickets.keys import KEY_RULE, is_valid_key
from tickets.lane_item import LAST, Item, number
from tickets.sequence import Lane
from tickets.settings import unserved
from tickets.tables import COUNTER_KEY, RESERVED_ITEM_PREFIX

from ..registry import Command, Context, say, whole_number
from ..table import AdminError, CounterTable
from .raise_lanes import KeyLanes, Outcome, key_lanes, next_ticket_above, raise_key

TEXT = """\
raise each counter of an old counter table's items above its old value (plus a margin)

Each key of an old table (--key-attribute, --value-attribute) goes above its value plus
--margin here, as `raise` does; the old table is never written. The first run records each
target ("_migration#KEY"): later runs and migrate --verify name each key the old counter
passed it ("OVERLAP": numbers issued twice). A line per key: "raised", "already above",
"would raise" or "NOT MIGRATED"; an unreadable item is "skipped". Exit status 0 when all
were migrated and none overlaps; it is safe to repeat. Per region: migrate with a margin;
switch the callers; migrate --verify; then migrate again (docs/how-to/migrate.md).

examples:
  .venv/bin/python -m tickets_admin migrate --from-table counters --key-attribute systemKey \\
      --value-attribute counter --margin 100000 --dry-run
  .venv/bin/python -m tickets_admin migrate --from-table counters --key-attribute systemKey \\
      --value-attribute counter --verify"""

# Its records in the Tickets table (not counters): the first run's time and table, and + KEY, the key's target.
MIGRATION_RUN_ITEM = f"{RESERVED_ITEM_PREFIX}migration"
MIGRATION_ITEM_PREFIX = f"{RESERVED_ITEM_PREFIX}migration#"


class OldCounters(NamedTuple):
    values: dict[str, int]
    skipped: list[str]  # one line each: which item, and why


def read_old_counters(items: Iterable[Item], key_attribute: str, value_attribute: str) -> OldCounters:
    values: dict[str, int] = {}
    skipped: list[str] = []
    for item in items:
        key, value = item.get(key_attribute), item.get(value_attribute)
        if key is None:
            name, which = None, f"an item without {key_attribute}: {clip(json.dumps(item, sort_keys=True), 200)}"
        else:
            name, which = key.get("S"), f"{key_attribute} {clip(json.dumps(key))}"
        whole = _whole_number(value)
        if not is_valid_key(name):
            skipped.append(f"skipped {which}: not a valid key (a string of {KEY_RULE})")
        elif whole is None:
            skipped.append(
                f"skipped {which}: its {value_attribute} is "
                f"{'missing' if value is None else clip(json.dumps(value))}, not a whole number (0 or more)"
            )
        else:
            values[name] = max(whole, values.get(name, whole))
    return OldCounters(dict(sorted(values.items())), skipped)


def _whole_number(value: dict[str, str] | None) -> int | None:
    """A DynamoDB number that is whole, 0 or more (however written, e.g. 1E+3); else None."""
    try:
        whole = Decimal((value or {})["N"])
    except (KeyError, InvalidOperation):
        return None
    return int(whole) if whole.is_finite() and whole >= 0 and whole == whole.to_integral_value() else None


class DryRunTable(CounterTable):
    """Read for real, every write answered "done" and not sent: raise_key reports exactly what it would write."""

    def write(self, item_key: str, request: dict[str, Any]) -> bool:
        return True


class Target(NamedTuple):
    """What the first run that raised a key recorded: the old callers may take numbers up to `value`."""

    value: int
    described: str  # "VALUE (old value V + margin M, recorded AT)"


def _read_target(table: CounterTable, key: str) -> Target | None:
    if (item := table.get(MIGRATION_ITEM_PREFIX + key)) is None:
        return None
    target, old_value, margin = (number(item, name) for name in ("target", "oldValue", "margin"))
    if target is None or old_value is None or margin is None or "at" not in item:
        raise AdminError(
            f"{MIGRATION_ITEM_PREFIX + key}: a migration record without a whole target, oldValue and margin (edited by "
            "hand): restore it from a backup (a point-in-time restore of the table)"
        )
    return Target(target, f"{target} (old value {old_value} + margin {margin}, recorded {item['at']['S']})")


def _record(table: CounterTable, item_key: str, values: dict[str, int | str]) -> None:
    typed = {
        f":{name}": {"N": str(value)} if isinstance(value, int) else {"S": value} for name, value in values.items()
    }
    request = {
        "UpdateExpression": "SET " + ", ".join(f"#{name} = :{name}" for name in values),
        "ConditionExpression": "attribute_not_exists(#counter)",
        "ExpressionAttributeNames": {"#counter": COUNTER_KEY, **{f"#{name}": name for name in values}},
        "ExpressionAttributeValues": typed,
    }
    table.write(item_key, request)


def _issued(table: CounterTable, lanes: list[Lane], low: int, high: int, numbers: str) -> str | None:
    """Which of the numbers low+1 .. high (`numbers`) these lanes issued, told; None if none."""
    spans = [  # each lane's numbers in low+1 .. high: ranges, counted, never listed
        span
        for lane in lanes
        if (last := number(table.get(lane.item_key), LAST)) is not None
        and (span := range(next_ticket_above(lane, low), min(high, last) + 1, lane.step))
    ]
    if not spans:
        return None
    where = f"{table.region} ({min(span[0] for span in spans)} .. {max(span[-1] for span in spans)})"
    return f"Tickets has issued {sum(map(len, spans))} of {numbers} in {where}: each twice"


@dataclass(frozen=True)
class _Run:
    args: argparse.Namespace
    table: CounterTable
    first_run: str | None
    now: str

    def overlap(self, lanes: KeyLanes, target: Target, value: int) -> str:
        taken = f"the old callers took {target.value + 1} .. {value}, above the target {target.described}"
        issued = _issued(self.table, lanes.every_epoch, target.value, value, "those numbers")
        none = f"Tickets has issued none of those numbers in {self.table.region} yet, but its next ones are among them"
        return f"{taken}; {issued or none}"

    def migrate(self, key: str, value: int, lanes: KeyLanes, recorded: Target | None) -> str:
        margin, dry_run = self.args.margin, self.args.dry_run
        target = f"{value + margin} (old value {value} + margin {margin})"
        lines: list[str] = []
        try:
            outcomes = raise_key(self.table, lanes, value + margin, lines.append)
        except AdminError as err:
            say(f"{key}: NOT MIGRATED: not raised above {target}: {' '.join(str(err).splitlines())}")
            return "not migrated"
        if Outcome.OFF_LANE in outcomes:  # its line says what needs a fix by hand
            outcome, verb = "not migrated", "NOT MIGRATED: not raised above"
        elif Outcome.RAISED in outcomes:
            outcome, verb = "raised", "would raise above" if dry_run else "raised above"
        else:
            outcome = verb = "already above"
        first_run = self.first_run if recorded is None else None
        new = f" (new in the old table since the first run, {first_run})" if first_run else ""
        say(f"{key}{new}: {verb} {target}: {'; '.join(lines)}")
        if recorded is None and outcome != "not migrated" and not dry_run:
            record = {"target": value + margin, "oldValue": value, "margin": margin, "at": self.now}
            _record(self.table, MIGRATION_ITEM_PREFIX + key, record)
        return outcome

    def verify(self, key: str, value: int, lanes: KeyLanes, recorded: Target | None) -> str:
        if recorded is not None:
            if value > recorded.value:
                return "overlap"
            say(f"{key}: within its target: the old counter is at {value}, the target {recorded.described}")
            return "within"
        issued = _issued(self.table, lanes.every_epoch, -1, value, "the numbers up to it")
        say(
            f"{key}: NEW in the old table since the first run ({self.first_run}), at {value}, never migrated: "
            f"{issued or 'Tickets has issued none of the numbers up to it here'}. Run migrate (without --verify) to "
            "raise it"
        )
        return "new"


def _migrate(args: argparse.Namespace, context: Context) -> int:
    region, verify = context.region, args.verify
    table = (DryRunTable if args.dry_run else CounterTable)(context.table_name, region, context.endpoint_url)
    context.check_ledger()
    settings, ledger = context.settings(), context.ledger
    from_region = args.from_region or region
    named_by = "--from-table and --from-region (default: --region, the first region in cdk.json)"
    old_table = CounterTable(args.from_table, from_region, context.endpoint_url, named_by)
    say(
        f"{'verifying' if verify else 'migrating'} table {args.from_table}"
        + (f" in {from_region}" if from_region != region else "")
        + f" ({args.key_attribute} -> {args.value_attribute}) "
        f"{'against' if verify else 'into'} table {table.table} in {region} (slot "
        f"{settings.region_slot} of {settings.region_slots})"
        + ("" if verify else f", margin {args.margin}")
        + (": dry run, nothing is written" if args.dry_run else "")
    )
    old = read_old_counters(old_table.scan(), args.key_attribute, args.value_attribute)
    first_item = table.get(MIGRATION_RUN_ITEM)
    first_run = None if first_item is None else first_item.get("at", {}).get("S", "an unknown time")
    if verify and first_run is None:
        say(f"no migrate run is recorded in table {table.table}: run migrate (without --verify) first")
        return 1
    run = _Run(args, table, first_run, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    counts: Counter[str] = Counter()
    for key, value in old.values.items():
        if (counter := settings.counter(key)) is None:
            outcome = "not served" if verify else "not migrated"
            fix = "" if verify else ": add it to tickets.counters there, then migrate again"
            say(f"{key}: {outcome.upper()}: {unserved(key, 'cdk.json')}{fix}")
            counts[outcome] += 1
            continue
        lanes = key_lanes(key, counter, settings.region_slot, settings.region_slots, ledger)
        recorded = _read_target(table, key)
        if recorded is not None and value > recorded.value:
            say(f"{key}: OVERLAP: {run.overlap(lanes, recorded, value)}")
            counts["overlap"] += not verify
        counts[(run.verify if verify else run.migrate)(key, value, lanes, recorded)] += 1
    for line in old.skipped:
        say(line)
    keys, skipped = f"{len(old.values)} key(s)", f"{len(old.skipped)} item(s) skipped"
    if verify:
        say(
            f"{keys}: {counts['within']} within their target, {counts['overlap']} overlapping it, "
            f"{counts['new']} new since the first run, {counts['not served']} not served; {skipped}; nothing was "
            "written"
        )
        return 0 if counts["within"] == len(old.values) and not old.skipped else 1
    if first_run is None and not args.dry_run:
        _record(table, MIGRATION_RUN_ITEM, {"fromTable": args.from_table, "fromRegion": from_region, "at": run.now})
    say(
        f"{keys}: {counts['raised']} {'would raise' if args.dry_run else 'raised'}, {counts['already above']} already "
        f"above, {counts['not migrated']} not migrated"
        + (f", {counts['overlap']} past their recorded target" if counts["overlap"] else "")
        + f"; {skipped}"
        + ("; dry run: nothing was written" if args.dry_run else "")
    )
    return 0 if counts["not migrated"] == counts["overlap"] == 0 and not old.skipped else 1


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from-table", required=True, metavar="NAME", help="the old table (at the same endpoint)")
    parser.add_argument("--from-region", metavar="REGION", help="the old table's region (default: --region)")
    parser.add_argument("--key-attribute", required=True, metavar="A", help="its counters' names, e.g. systemKey")
    parser.add_argument("--value-attribute", required=True, metavar="V", help="their last values, e.g. counter")
    parser.add_argument("--margin", default=0, metavar="M", type=whole_number, help="a whole number (default 0)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print what it would do; write nothing")
    mode.add_argument("--verify", action="store_true", help="write nothing: compare with the recorded targets")


COMMANDS = (Command("migrate", TEXT, _migrate, _arguments),)
