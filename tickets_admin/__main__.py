# The module's docstring (`python -m tickets_admin`: each command and its help) is made from COMMANDS, below.
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import tickets
from tickets_deploy.config import load_config_file, pick_region
from tickets_deploy.ledger import LEDGER_FILE, LedgerError, ledger_path_beside, service_config
from tickets_deploy.rules import ConfigError

try:
    from .registry import Command, Context, find_commands
    from .table import AdminError
except ModuleNotFoundError as missing:
    # `make init` and `make synth` install the CDK set alone; the commands their refusals name reach AWS through
    # botocore, which `make deploy`'s set brings: say so rather than print a traceback.
    if missing.name != "botocore":
        raise
    sys.exit(
        "error: tickets_admin reaches DynamoDB through botocore, which this Python lacks: "
        "`make .venv/.deploy` installs it (as `make deploy` and `make serve` do)"
    )

COMMANDS = find_commands()
__doc__ = "`python -m tickets_admin`, its commands:\n" + "\n".join(f"- {each.name}: {each.help}" for each in COMMANDS)

DESCRIPTION = """\
Operate on a Tickets deployment's counter table, in one region. The table's name, the
region's slot and each counter's start, stride, max and shards come from cdk.json, as
the stack and the local server take them. raise and migrate first check cdk.json against
the deployment ledger beside it (tickets.lock.json), as synthesis does, and refuse, with
synthesis's message, a config it refuses. With --service TABLE (an app built on the
construct, which has no cdk.json config), everything comes from the ledger alone: the
service's settings as its last recorded version deployed them. Every write is
conditional: it is safe to run while the service issues tickets, and safe to repeat."""

CREDENTIALS = """\
Credentials come from botocore's usual chain (environment, ~/.aws, SSO, instance role); with
--endpoint-url http://127.0.0.1:8001 (make serve ENDPOINT_URL=...) and none set, dummy ones, which
local endpoints accept. Errors print "error: <what to do>" on stderr and exit with status 1."""


def first_example(command: Command) -> list[str]:
    lines = command.epilog.splitlines()
    start = next(index for index, line in enumerate(lines) if f"tickets_admin {command.name}" in line)
    end = start
    while lines[end].endswith("\\"):
        end += 1
    return lines[start : end + 1]


EPILOG = "\n".join(["examples:", *(line for each in COMMANDS for line in first_example(each)), "", CREDENTIALS])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        default="cdk.json",
        metavar="PATH",
        help="the CDK config to take the table, slots and counters from (default: cdk.json)",
    )
    one_region = argparse.ArgumentParser(add_help=False)  # fence works on several regions: its own options
    one_region.add_argument(
        "--region",
        help="a region from cdk.json's tickets.regions; its slot decides its lanes "
        "(default: the first configured region)",
    )
    one_region.add_argument(
        "--endpoint-url",
        metavar="URL",
        help="a DynamoDB-compatible endpoint, e.g. the one given to make serve ENDPOINT_URL= "
        "(default: DynamoDB itself)",
    )
    common.add_argument(
        "--table",
        metavar="NAME",
        help="the counter table (default: tableName in cdk.json, which the stack and the local server use)",
    )

    parser = argparse.ArgumentParser(
        prog=".venv/bin/python -m tickets_admin",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {tickets.__version__}")
    parser.add_argument(
        "--service",
        metavar="TABLE",
        help="take the service's config from the ledger alone, by its table name, instead of from --config "
        "(an app built on the construct)",
    )
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help=f"the ledger --service reads (default: {LEDGER_FILE} beside cdk.json, in the current directory)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        subparser = commands.add_parser(
            command.name,
            parents=[common, one_region] if command.one_region else [common],
            description=command.description,
            epilog=command.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            help=command.help,
        )
        command.arguments(subparser)
        subparser.set_defaults(run=command.run, one_region=command.one_region)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        status: int = args.run(args, _context(args))
    except (ConfigError, AdminError, LedgerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return status


def _context(args: argparse.Namespace) -> Context:
    """The config from --config (cdk.json), or with --service from the ledger alone."""
    region_given, endpoint_url = (args.region, args.endpoint_url) if args.one_region else (None, None)
    if args.service is None:
        path, named = Path(args.config), args.config
        config = load_config_file(args.config)
    else:
        path = Path(args.ledger) if args.ledger is not None else ledger_path_beside(Path("cdk.json"))
        config, named = service_config(path, args.service), f"{path} (service {args.service})"
    region = pick_region(config, region_given, named)
    return Context(config, path, region, endpoint_url, args.table, from_ledger=args.service is not None)


if __name__ == "__main__":
    sys.exit(main())
