"""`python -m tickets_admin`: raise a counter above a number, list the counters, export every counter item,
migrate an old counter table's values, or export and audit a series' journal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import tickets
from tickets.keys import KEY_RULE, is_valid_key
from tickets.sequence import lanes_of
from tickets_deploy import epochs
from tickets_deploy.config import ConfigError, DeploymentConfig, load_config_file, pick_region, region_settings
from tickets_deploy.ledger import LEDGER_FILE, LedgerError, check_config_file, ledger_path_beside

from .fence import add_fence_command, run_fence
from .journal import SERIES_COMMANDS, add_series_commands, run_series_command
from .listing import counters, table_lines
from .migrate import MIGRATE_DESCRIPTION, MIGRATE_EPILOG, DryRunTable, Source, migrate, read_old_counters, verify
from .operations import export_items, raise_key
from .table import AdminError, CounterTable

DESCRIPTION = """\
Operate on a Tickets deployment's counter table, in one region. The table's name, the
region's slot and each counter's start, stride, max and shards come from cdk.json, as
the stack and the local server take them. raise and migrate first check cdk.json against
the deployment ledger beside it (tickets.lock.json), as synthesis does, and refuse, with
synthesis's message, a config it refuses. Every write is conditional: it is safe to run
while the service issues tickets, and safe to repeat."""

EPILOG = """\
examples:
  python -m tickets_admin raise orders --above 120000           # the first region in cdk.json
  python -m tickets_admin raise orders --above 120000 --region eu-west-1
  python -m tickets_admin list
  python -m tickets_admin fence                                 # after a layout change in cdk.json
  python -m tickets_admin export > counters.jsonl
  python -m tickets_admin export --endpoint-url http://127.0.0.1:8001   # make serve ENDPOINT_URL=...
  python -m tickets_admin migrate --from-table counters --key-attribute systemKey --value-attribute counter \
      --margin 100000

Credentials come from botocore's usual chain (environment, ~/.aws, SSO, instance role);
with --endpoint-url and none set, dummy ones, which local endpoints accept.
Errors print "error: <what to do>" on stderr and exit with status 1."""

RAISE_DESCRIPTION = """\
Make every lane of KEY in this region (one per shard) next issue its smallest ticket
greater than N. For a point-in-time restore (which rewinds `last`: raise above the
highest ticket issued before the incident, e.g. from an export of the old table) and
for a move from another counter: raise above its current value plus a margin before
pointing callers at Tickets, then again above its final value once it has stopped
(docs/operations.md, Day 2).

It never lowers a lane: a lane already past N is left alone ("already above"), and so
is one the service moves past N while this runs. An unused lane gets its item. An item
the service refuses because it did not write it (no step or first: typed in by hand, or
left by version 0.1.0), or whose last is off its lane, is made a lane whose next ticket
is above both N and its own last; a sharded key's layout missing first or stride is
completed from cdk.json. Before writing anything it refuses a lane whose stored step,
first ticket or shard layout disagrees with cdk.json, and an N whose next ticket would
pass max. It prints one line per lane: last before -> after, and the lane's next
ticket. Exit status 1 if a lane needs a fix by hand (a last that is not a whole number)."""

RAISE_EPILOG = """\
examples:
  python -m tickets_admin raise orders --above 120000
  python -m tickets_admin raise orders --above 120000 --region eu-west-1 --table shop-tickets"""

EXPORT_DESCRIPTION = """\
Print every item of the counter table (all keys, all lanes) as JSON Lines: one JSON
object per line, sorted by `counter`, e.g.
  {"counter": "orders", "first": 5000, "last": 5003, "step": 1}
Whole numbers are printed exactly, however large (a parser that reads JSON numbers as
doubles rounds those above 2^53-1); any other attribute value keeps DynamoDB's typed
form, e.g. {"N": "12.5"}. Read with a consistent, paginated Scan. The records `migrate`
keeps in the table (items named "_migration...": no key starts with "_") are not
counters and are not printed."""

EXPORT_EPILOG = """\
examples:
  python -m tickets_admin export > counters.jsonl
  python -m tickets_admin export --region eu-west-1 --table restored-tickets"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        default="cdk.json",
        metavar="PATH",
        help="the CDK config to take the table, slots and counters from (default: cdk.json)",
    )
    common.add_argument(
        "--region",
        default=None,
        help="a region from cdk.json's tickets.regions; its slot decides its lanes "
        "(default: the first configured region)",
    )
    common.add_argument(
        "--endpoint-url",
        default=None,
        metavar="URL",
        help="a DynamoDB-compatible endpoint, e.g. the one given to make serve ENDPOINT_URL= "
        "(default: DynamoDB itself)",
    )
    common.add_argument(
        "--table",
        default=None,
        metavar="NAME",
        help="the counter table (default: tableName in cdk.json, which the stack and the local server use)",
    )

    parser = argparse.ArgumentParser(
        prog="python -m tickets_admin",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(dry_run=False)  # only migrate has --dry-run
    _add_version(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    raise_ = commands.add_parser(
        "raise",
        parents=[common],
        description=RAISE_DESCRIPTION,
        epilog=RAISE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="make every lane of KEY in this region next issue its smallest ticket above N",
    )
    raise_.add_argument("key", metavar="KEY", type=_key, help="the counter")
    raise_.add_argument(
        "--above",
        required=True,
        metavar="N",
        type=_whole_number,
        help="every lane's next ticket will be greater than N (a whole number, 0 or more)",
    )
    commands.add_parser(
        "export",
        parents=[common],
        description=EXPORT_DESCRIPTION,
        epilog=EXPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="print every counter item as JSON, one object per line",
    )
    migrate_ = commands.add_parser(
        "migrate",
        parents=[common],
        description=MIGRATE_DESCRIPTION,
        epilog=MIGRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="raise each counter of an old counter table's items above its old value (plus a margin)",
    )
    migrate_.add_argument(
        "--from-table", required=True, metavar="NAME", help="the old counter table (at the same endpoint)"
    )
    migrate_.add_argument(
        "--from-region",
        default=None,
        metavar="REGION",
        help="the old counter table's region (default: --region, the Tickets region raised): an API Gateway "
        "counter lives in one region, and every Tickets region is migrated from it",
    )
    migrate_.add_argument(
        "--key-attribute",
        required=True,
        metavar="A",
        help="the old table's attribute that names each counter (a string), e.g. systemKey",
    )
    migrate_.add_argument(
        "--value-attribute",
        required=True,
        metavar="V",
        help="the old table's attribute that holds each counter's last value (a number), e.g. counter",
    )
    migrate_.add_argument(
        "--margin",
        default=0,
        metavar="M",
        type=_whole_number,
        help="raise each counter above its old value plus M (a whole number; default 0): what the old "
        "callers may still take before they are switched to Tickets",
    )
    mode = migrate_.add_mutually_exclusive_group()
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
    _add_list_command(commands, common)
    add_fence_command(commands)
    add_series_commands(commands, common)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "fence":
            return run_fence(args, report=lambda line: print(line, flush=True))
        config = load_config_file(args.config)
        region = pick_region(config, args.region, args.config)
        if args.command in SERIES_COMMANDS:
            return run_series_command(args, config, region)
        table_class = DryRunTable if args.dry_run else CounterTable
        table = table_class(args.table or config.table_name, region, args.endpoint_url)
        if args.command == "export":
            for line in export_items(table):
                print(line)
            return 0
        if args.command == "list":
            return _list(table)
        _check_ledger(Path(args.config), config, args.endpoint_url)
        settings = region_settings(epochs.applied_beside(config, args.config), region)
        if args.command == "migrate":
            from_region = args.from_region or region
            old_table = CounterTable(
                args.from_table,
                from_region,
                args.endpoint_url,
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
            report = lambda line: print(line, flush=True)  # noqa: E731
            if args.verify:
                return 0 if verify(table, settings, old, region=region, report=report) else 1
            migrated = migrate(
                table,
                settings,
                old,
                args.margin,
                source=Source(args.from_table, from_region),
                region=region,
                dry_run=args.dry_run,
                report=report,
            )
            return 0 if migrated else 1
        counter = settings.counter(args.key)
        if counter is None:
            raise AdminError(
                f"{args.key!r} is not configured in {args.config} and strictKeys is on, so the "
                "service does not serve it"
            )
        lanes = lanes_of(args.key, counter, settings.region_slot, settings.region_slots)
        print(
            f"raising {args.key} above {args.above} in {region} (slot {settings.region_slot} of "
            f"{settings.region_slots}), table {table.table}: {len(lanes)} lane(s)",
            flush=True,
        )
        results = raise_key(table, args.key, lanes, args.above, report=lambda line: print(line, flush=True))
    except (ConfigError, AdminError, LedgerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 1 if any(result.needs_attention for result in results) else 0


def _check_ledger(config_file: Path, config: DeploymentConfig, endpoint_url: str | None) -> None:
    """raise and migrate write lanes with cdk.json's layouts: the ledger beside it must accept that
    config, as synthesis would, or a layout no version deployed could be written into a deployed table
    (which then refuses the key). Only a local endpoint may go without a ledger (make serve before make init)."""
    if endpoint_url is not None and not ledger_path_beside(config_file).exists():
        print(
            f"note: no {LEDGER_FILE} beside {config_file}: the layouts are taken from it unchecked "
            "(allowed only with --endpoint-url)",
            file=sys.stderr,
        )
        return
    check_config_file(config_file, config)


LIST_DESCRIPTION = """\
Print the counters of this region's table, one a line: the key, how many lanes its items
hold in this region (one per shard), the highest ticket they issued (`last`, - if none)
and the step stored on them. Read from the table with a consistent, paginated Scan and
the operator's credentials (the function itself may not scan), so it lists every key
that was used, configured or not. `export` prints the items themselves."""

LIST_EPILOG = """\
examples:
  python -m tickets_admin list
  python -m tickets_admin list --region eu-west-1
  python -m tickets_admin list --endpoint-url http://127.0.0.1:8001   # make serve ENDPOINT_URL=...
  (make serve on its in-process moto: curl http://127.0.0.1:8000/_local/counters)"""


def _add_list_command(commands: Any, common: argparse.ArgumentParser) -> None:
    commands.add_parser(
        "list",
        parents=[common],
        description=LIST_DESCRIPTION,
        epilog=LIST_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="print the counters of this region's table: key, lanes, last, step",
    )


def _list(table: CounterTable) -> int:
    for line in table_lines(counters(table.scan())):
        print(line)
    return 0


def _add_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"%(prog)s {tickets.__version__}")


def _key(text: str) -> str:
    if not is_valid_key(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid key ({KEY_RULE})")
    return text


def _whole_number(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 or more, digits only)")
    return int(text)


if __name__ == "__main__":
    sys.exit(main())
