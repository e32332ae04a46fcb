"""The counter table's commands: raise, export, list and migrate, each its arguments and its run together
(tickets_admin.registry)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from tickets.keys import KEY_RULE, is_valid_key
from tickets.settings import Settings, unserved
from tickets_deploy.environment import region_settings
from tickets_deploy.ledger import LEDGER_FILE, Ledger, applied, check_config_file, ledger_path_beside, read_ledger_file

from .key_lanes import key_lanes
from .listing import COLUMNS, ISSUED_COLUMN, LEFT_COLUMN, TIME_LEFT_COLUMN, counters, table_lines, with_rates
from .migrate import MIGRATE_DESCRIPTION, MIGRATE_EPILOG, DryRunTable, Source, migrate, read_old_counters, verify
from .operations import export_items, raise_key
from .registry import Command, Context
from .table import AdminError, CounterTable

RAISE_DESCRIPTION = """\
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

RAISE_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin raise orders --above 120000
  .venv/bin/python -m tickets_admin raise orders --above 120000 --region eu-west-1 --table shop-tickets"""

EXPORT_DESCRIPTION = """\
Print every item of the counter table (all keys, all lanes) as JSON Lines: one JSON
object per line, sorted by `counter`, e.g.
  {"counter": "orders", "first": 5000, "last": 5003, "step": 1}
Whole numbers are printed exactly, however large (a parser that reads JSON numbers as
doubles rounds those above 2^53-1); any other attribute value keeps DynamoDB's typed
form, e.g. {"N": "12.5"}. Read with a consistent, paginated Scan. The records `migrate`
keeps in the table (items named "_migration...": no key starts with "_") are not
counters and are not printed. A key whose layout changed above a fence has the items of
each epoch (orders, orders@1, orders@1#0, ...); those of its earlier epochs are stopped:
step 0, and stoppedStep the step they had."""

EXPORT_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin export > counters.jsonl
  .venv/bin/python -m tickets_admin export --region eu-west-1 --table restored-tickets"""

LIST_DESCRIPTION = """\
Print the counters of this region's table, one a line: the key, how many lanes its items
hold in this region (one per shard), the highest ticket they issued (`last`, - if none),
the step stored on them, and `left`: how many more tickets those lanes can issue before
the key's max in cdk.json (each lane (max - last) / step; - for a key the config does not
serve or an item code did not write; a lane not used yet in this region is not counted).
Read from the table with a consistent, paginated Scan and the operator's credentials (the
function itself may not scan), so it lists every key that was used, configured or not.
`export` prints the items themselves. A key whose layout changed above a fence has a line
per epoch, named as its items (orders, orders@1, ...), oldest first: the lanes of an
earlier epoch were stopped at its fence (step "0 (stopped)", left 0); the last epoch's
lanes are the ones the function issues from.

With --rate-over S it reads the table again S seconds later and adds, per key, the tickets
`issued` in between (every caller's, in this region) and the `time left` at that rate: a
rate measured over those S seconds only, so a burst or a lull moves it; take S long
enough to see many tickets. (The function's CounterDaysLeft metric measures each lane
over 10 minutes or more; its alarm is CounterRunningOut.)"""

LIST_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin list
  .venv/bin/python -m tickets_admin list --rate-over 60          # and each key's time left at the last minute's rate
  .venv/bin/python -m tickets_admin list --region eu-west-1
  .venv/bin/python -m tickets_admin list --endpoint-url http://127.0.0.1:8001   # make serve ENDPOINT_URL=...
  (make serve on its in-process moto: curl http://127.0.0.1:8000/_local/counters)"""


def _raise_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", type=_key, help="the counter")
    parser.add_argument(
        "--above",
        required=True,
        metavar="N",
        type=whole_number,
        help="every lane's next ticket will be greater than N (a whole number, 0 or more)",
    )


def _raise(args: argparse.Namespace, context: Context) -> int:
    table = CounterTable(context.table_name, context.region, context.endpoint_url)
    _check_ledger(context)
    settings = _settings(context, context.region)
    counter = settings.counter(args.key)
    if counter is None:
        raise AdminError(
            f"{args.key!r} is not configured: {unserved(args.key, str(context.config_file))}, so the service does not "
            "serve it: add it to tickets.counters there first (synthesis records it)"
        )
    lanes = key_lanes(args.key, counter, settings.region_slot, settings.region_slots, _ledger(context))
    epoch = f" (epoch {counter.epoch}, above its fence at {counter.fence})" if counter.epoch else ""
    print(
        f"raising {args.key}{epoch} above {args.above} in {context.region} (slot {settings.region_slot} of "
        f"{settings.region_slots}), table {table.table}: {len(lanes.current)} lane(s)",
        flush=True,
    )
    results = raise_key(
        table,
        args.key,
        lanes.current,
        args.above,
        report=lambda line: print(line, flush=True),
        stopped=lanes.stopped,
    )
    return 1 if any(result.needs_attention for result in results) else 0


def _export(args: argparse.Namespace, context: Context) -> int:
    for line in export_items(CounterTable(context.table_name, context.region, context.endpoint_url)):
        print(line)
    return 0


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rate-over",
        default=0,
        metavar="S",
        type=whole_number,
        help="read the table again S seconds later and show each key's tickets issued in between and its time "
        "left at that rate (default 0: read once, no rate)",
    )


def _list(args: argparse.Namespace, context: Context) -> int:
    table = CounterTable(context.table_name, context.region, context.endpoint_url)
    settings = _settings(context, context.region)

    def max_of(key: str) -> int | None:
        counter = settings.counter(key)
        return None if counter is None else counter.max

    def read() -> tuple[list[dict[str, Any]], float]:
        """The listing, and the time halfway through the Scan that read it."""
        began = time.monotonic()
        listed = counters(table.scan(), max_of)
        return listed, (began + time.monotonic()) / 2

    listed, read_at = read()
    columns: tuple[str, ...] = (*COLUMNS, LEFT_COLUMN)
    if args.rate_over:
        print(f"reading the table again in {args.rate_over} s, for each key's rate", file=sys.stderr, flush=True)
        time.sleep(args.rate_over)
        later, later_at = read()
        listed, columns = with_rates(listed, later, later_at - read_at), (*columns, ISSUED_COLUMN, TIME_LEFT_COLUMN)
    for line in table_lines(listed, columns):
        print(line)
    return 0


def _migrate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from-table", required=True, metavar="NAME", help="the old counter table (at the same endpoint)"
    )
    parser.add_argument(
        "--from-region",
        default=None,
        metavar="REGION",
        help="the old counter table's region (default: --region, the Tickets region raised): an API Gateway "
        "counter lives in one region, and every Tickets region is migrated from it",
    )
    parser.add_argument(
        "--key-attribute",
        required=True,
        metavar="A",
        help="the old table's attribute that names each counter (a string), e.g. systemKey",
    )
    parser.add_argument(
        "--value-attribute",
        required=True,
        metavar="V",
        help="the old table's attribute that holds each counter's last value (a number), e.g. counter",
    )
    parser.add_argument(
        "--margin",
        default=0,
        metavar="M",
        type=whole_number,
        help="raise each counter above its old value plus M (a whole number; default 0): what the old "
        "callers may still take before they are switched to Tickets",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run", action="store_true", help="read both tables and print what it would do; write nothing"
    )
    mode.add_argument(
        "--verify",
        action="store_true",
        help="write nothing: compare each old counter's current value with the target the first run recorded, "
        "and exit 1 naming every key the old callers took past it (the numbers issued twice) and every key new "
        "in the old table since the first run",
    )


def _migrate(args: argparse.Namespace, context: Context) -> int:
    region = context.region
    table = (DryRunTable if args.dry_run else CounterTable)(context.table_name, region, context.endpoint_url)
    _check_ledger(context)
    settings = _settings(context, region)
    ledger = _ledger(context)
    from_region = args.from_region or region
    old_table = CounterTable(
        args.from_table,
        from_region,
        context.endpoint_url,
        named_by="--from-table",
        region_named_by="--from-region (default: --region, the first region in cdk.json)",
    )
    print(
        f"{'verifying' if args.verify else 'migrating'} table {args.from_table}"
        + (f" in {from_region}" if from_region != region else "")
        + f" ({args.key_attribute} -> {args.value_attribute}) "
        f"{'against' if args.verify else 'into'} table {table.table} in {region} (slot "
        f"{settings.region_slot} of {settings.region_slots})"
        + ("" if args.verify else f", margin {args.margin}")
        + (": dry run, nothing is written" if args.dry_run else ""),
        flush=True,
    )
    old = read_old_counters(old_table.scan(), args.key_attribute, args.value_attribute)

    def report(line: str) -> None:
        print(line, flush=True)

    if args.verify:
        return 0 if verify(table, settings, old, region=region, report=report, ledger=ledger) else 1
    source = Source(args.from_table, from_region)
    migrated = migrate(
        table,
        settings,
        old,
        args.margin,
        source=source,
        region=region,
        dry_run=args.dry_run,
        report=report,
        ledger=ledger,
    )
    return 0 if migrated else 1


def _settings(context: Context, region: str) -> Settings:
    """The region's settings as its function runs them: a key whose layout changed serves its latest epoch,
    above its fence (tickets_deploy.ledger.applied, from the ledger beside cdk.json, or --service's ledger)."""
    return region_settings(applied(context.config, _ledger(context)), region)


def _ledger(context: Context) -> Ledger | None:
    """The service's ledger (beside cdk.json, or --service's): its epochs say which lanes each key has. None
    without one (only with --endpoint-url: _check_ledger)."""
    path = context.config_file if context.from_ledger else ledger_path_beside(context.config_file)
    if not path.exists():
        return None
    return read_ledger_file(path).services.get(context.config.table_name)


def _check_ledger(context: Context) -> None:
    """raise and migrate write lanes with cdk.json's layouts: the ledger beside it must accept that
    config, as synthesis would, or a layout no version deployed could be written into a deployed table
    (which then refuses the key). Only a local endpoint may go without a ledger (make serve before the ledger
    is written). A config built from the ledger (--service) is what its last version recorded."""
    if context.from_ledger:
        return
    if context.endpoint_url is not None and not ledger_path_beside(context.config_file).exists():
        print(
            f"note: no {LEDGER_FILE} beside {context.config_file}: the layouts are taken from it unchecked "
            "(allowed only with --endpoint-url)",
            file=sys.stderr,
        )
        return
    check_config_file(context.config_file, context.config)


def _key(text: str) -> str:
    if not is_valid_key(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid key ({KEY_RULE})")
    return text


def whole_number(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 or more, digits only)")
    return int(text)


COMMANDS = (
    Command(
        "raise",
        "make every lane of KEY in this region next issue its smallest ticket above N",
        RAISE_DESCRIPTION,
        RAISE_EPILOG,
        _raise,
        _raise_arguments,
    ),
    Command(
        "export", "print every counter item as JSON, one object per line", EXPORT_DESCRIPTION, EXPORT_EPILOG, _export
    ),
    Command(
        "migrate",
        "raise each counter of an old counter table's items above its old value (plus a margin)",
        MIGRATE_DESCRIPTION,
        MIGRATE_EPILOG,
        _migrate,
        _migrate_arguments,
    ),
    Command(
        "list",
        "print the counters of this region's table: key, lanes, last, step, tickets left (and time left)",
        LIST_DESCRIPTION,
        LIST_EPILOG,
        _list,
        _list_arguments,
    ),
)
