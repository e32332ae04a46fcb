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
from decimal import Decimal, InvalidOperation
from typing import Any

from tickets.errors import clip
from tickets.keys import KEY_RULE, is_valid_key
from tickets.lane_item import Item
from tickets.sequence import lanes_of
from tickets.settings import Settings

from .operations import LaneResult, Outcome, raise_key
from .table import AdminError, CounterTable

MIGRATE_DESCRIPTION = (
    """\
Read an old counter table (the API Gateway + DynamoDB atomic-counter pattern: one item
per counter, its name in --key-attribute and its last value in --value-attribute) and
raise each named Tickets counter in this region above the old value plus --margin, as
`raise KEY --above VALUE+MARGIN` would: every lane of the key next issues a ticket
greater than that, no lane is ever lowered, and nothing is written to the old table.

It prints one line per key: "raised" (each lane's last before -> after and its next
ticket), "already above" (nothing written), "would raise" (--dry-run: nothing
written), or "NOT MIGRATED" (why: e.g. the target would pass the counter's max, or
strictKeys is on and cdk.json does not configure the key). An item whose key attribute
is missing, not a string, or not a Tickets key
("""
    + KEY_RULE
    + """),
or whose value is missing or not a whole number (0 or more), is listed as "skipped",
never dropped silently. A last line counts what was done.

Exit status 0 when every item was migrated (raised or already above); 1 when an item
was skipped or a key was not migrated (the other keys were still done: fix those and
run it again), or on an error such as a missing table.

It is safe to repeat: a second run raises nothing it already raised. The safe order,
while old callers still count on the old table:
  1. migrate with a margin bigger than the numbers the old counters will hand out
     until step 2 is done;
  2. switch the callers to Tickets (the compatibility route in docs/migrating.md);
  3. migrate again (with any margin): it raises any counter the old callers passed."""
)

MIGRATE_EPILOG = """\
examples:
  python -m tickets_admin migrate --from-table counters --key-attribute systemKey \\
      --value-attribute counter --margin 100000 --dry-run
  python -m tickets_admin migrate --from-table counters --key-attribute systemKey \\
      --value-attribute counter --margin 100000 --region eu-west-1"""


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


def migrate(
    table: CounterTable,
    settings: Settings,
    old: OldCounters,
    margin: int,
    *,
    dry_run: bool = False,
    report: Callable[[str], None] = print,
) -> bool:
    """Raise each old key's Tickets counter above its old value + `margin`, one report line per key
    and per skipped item, then a count; True if every item was migrated."""
    counts = {"raised": 0, "already above": 0, "not migrated": 0, "skipped": len(old.skipped)}
    for key, value in old.values.items():
        above = value + margin
        target = f"{above} (old value {value} + margin {margin})"
        counter = settings.counter(key)
        if counter is None:
            report(f"{key}: NOT MIGRATED: strictKeys is on and cdk.json does not configure {key!r}")
            counts["not migrated"] += 1
            continue
        lanes = lanes_of(key, counter, settings.region_slot, settings.region_slots)
        lines: list[str] = []
        try:
            results = raise_key(table, key, lanes, above, report=lines.append)
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
        report(f"{key}: {verb} {target}: {'; '.join(lines)}")
        counts[outcome] += 1
    for line in old.skipped:
        report(line)
    done = "would raise" if dry_run else "raised"
    report(
        f"{len(old.values)} key(s): {counts['raised']} {done}, {counts['already above']} already above, "
        f"{counts['not migrated']} not migrated; {counts['skipped']} item(s) skipped"
        + ("; dry run: nothing was written" if dry_run else "")
    )
    return counts["not migrated"] == 0 and counts["skipped"] == 0


def _outcome(results: list[LaneResult]) -> str:
    if any(result.needs_attention for result in results):
        return "not migrated"  # the lane lines say which stored value needs a fix by hand
    if any(result.outcome is Outcome.RAISED for result in results):
        return "raised"
    return "already above"
