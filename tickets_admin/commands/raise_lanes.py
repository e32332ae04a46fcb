"""`tickets_admin raise KEY --above N` (tickets_admin/operations.py does it)."""

from __future__ import annotations

import argparse

from tickets.settings import unserved

from ..cli import counter_key, say, whole_number
from ..key_lanes import key_lanes
from ..operations import Outcome, raise_key
from ..registry import Command, Context
from ..table import AdminError

DESCRIPTION = """\
Make every lane of KEY in this region (one per shard) next issue its smallest ticket
greater than N. For a point-in-time restore (which rewinds `last`: raise above the
highest ticket issued before the incident, e.g. from an export of the old table) and
for a move from another counter: raise above its current value plus a margin before
pointing callers at Tickets, then again above its final value once it has stopped
(docs/how-to/restore.md, docs/how-to/migrate.md).

It never lowers a lane: a lane already past N is left alone ("already above"), and so
is one the service moves past N while this runs. An unused lane gets its item. An item
the service refuses because it did not write it (no step or first: typed in by hand, or
left by version 0.1.0), or whose last is off its lane, is made a lane whose next ticket
is above both N and its own last; a sharded key's layout missing first or stride is
completed from cdk.json. Before writing anything it refuses a lane whose stored step,
first ticket or shard layout disagrees with cdk.json, and an N whose next ticket would
pass max. It prints one line per lane: last before -> after, and the lane's next
ticket. Exit status 1 if a lane needs a fix by hand (a last that is not a whole number).

A key whose layout changed above a fence (`fence`) issues from its latest epoch's
lanes (items `KEY@N`, `KEY@N#shard`), the layout the ledger beside cdk.json records
last: those are the lanes raised. The lanes of its earlier epochs were stopped at their
fences and are never raised or restarted; one that a restore from before its fence
brought back (or dropped) is stopped again first, as the fence left it."""

EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin raise orders --above 120000
  .venv/bin/python -m tickets_admin raise orders --above 120000 --region eu-west-1 --table shop-tickets"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", type=counter_key, help="the counter")
    parser.add_argument(
        "--above",
        required=True,
        metavar="N",
        type=whole_number,
        help="every lane's next ticket will be greater than N (a whole number, 0 or more)",
    )


def _raise(args: argparse.Namespace, context: Context) -> int:
    table = context.counter_table()
    context.check_ledger()
    settings = context.settings()
    counter = settings.counter(args.key)
    if counter is None:
        raise AdminError(
            f"{args.key!r} is not configured: {unserved(args.key, str(context.config_file))}, so the service does not "
            "serve it: add it to tickets.counters there first (synthesis records it)"
        )
    lanes = key_lanes(args.key, counter, settings.region_slot, settings.region_slots, context.ledger())
    epoch = f" (epoch {counter.epoch}, above its fence at {counter.fence})" if counter.epoch else ""
    print(
        f"raising {args.key}{epoch} above {args.above} in {context.region} (slot {settings.region_slot} of "
        f"{settings.region_slots}), table {table.table}: {len(lanes.current)} lane(s)",
        flush=True,
    )
    results = raise_key(table, args.key, lanes.current, args.above, say, stopped=lanes.stopped)
    return 1 if any(result.outcome is Outcome.OFF_LANE for result in results) else 0


COMMAND = Command(
    "raise",
    "make every lane of KEY in this region next issue its smallest ticket above N",
    DESCRIPTION,
    EPILOG,
    _raise,
    _arguments,
)
