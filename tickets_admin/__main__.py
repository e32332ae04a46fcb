import argparse
import re
import sys
from pathlib import Path

import tickets
from tickets_deploy.config import load_config_file, pick_region
from tickets_deploy.ledger import LEDGER_FILE, LedgerError, ledger_path_beside, service_config
from tickets_deploy.rules import ConfigError

try:
    from .registry import Context, find_commands
    from .table import AdminError
except ModuleNotFoundError as missing:
    # `make init` and `make synth` install the CDK set alone, without botocore: a message, not a traceback.
    if missing.name != "botocore":
        raise
    sys.exit(
        "error: tickets_admin reaches DynamoDB through botocore, which this Python lacks: "
        "`make .venv/.deploy` installs it (as `make deploy` and `make serve` do)"
    )

COMMANDS = find_commands()
__doc__ = "`python -m tickets_admin`, its commands:\n" + "\n".join(f"- {each.name}: {each.help}" for each in COMMANDS)

DESCRIPTION = """\
Operate on one region's counter table as cdk.json (or, with --service, the ledger) configures
it; every write is conditional, safe while the service runs and to repeat (docs/reference/cli.md)."""

CREDENTIALS = """\
Credentials come from botocore's usual chain (environment, ~/.aws, SSO, instance role); with
--endpoint-url http://127.0.0.1:8001 (make serve ENDPOINT_URL=...) and none set, dummy ones, which
local endpoints accept. Errors print "error: <what to do>" on stderr and exit with status 1."""


FIRST_EXAMPLES = [re.split(r"\n  (?=\S)", each.text.partition("\nexamples:")[2])[1] for each in COMMANDS]
EPILOG = "\n".join(["examples:", *(f"  {example}" for example in FIRST_EXAMPLES), "", CREDENTIALS])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default="cdk.json", metavar="PATH", help="the CDK config (default: cdk.json)")
    common.add_argument("--table", metavar="NAME", help="the counter table (default: tableName in cdk.json)")
    one_region = argparse.ArgumentParser(add_help=False)
    one_region.add_argument("--region", help="one of tickets.regions (default: the first): its slot decides the lanes")
    one_region.add_argument("--endpoint-url", metavar="URL", help="a DynamoDB-compatible endpoint (make serve's)")
    parser = argparse.ArgumentParser(
        prog=".venv/bin/python -m tickets_admin",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {tickets.__version__}")
    parser.add_argument("--service", metavar="TABLE", help="take the service's config from the ledger alone")
    parser.add_argument("--ledger", metavar="PATH", help=f"the ledger --service reads (default: {LEDGER_FILE})")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        description, _, examples = command.text.partition("\n\nexamples:")
        subparser = commands.add_parser(
            command.name,
            parents=[common, one_region] if command.one_region else [common],
            description=description,
            epilog="examples:" + examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            help=command.help,
        )
        command.arguments(subparser)
        subparser.set_defaults(run=command.run, one_region=command.one_region)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return int(args.run(args, _context(args)))
    except (ConfigError, AdminError, LedgerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _context(args: argparse.Namespace) -> Context:
    region, endpoint_url = (args.region, args.endpoint_url) if args.one_region else (None, None)
    if args.service is None:
        path, named = Path(args.config), args.config
        config = load_config_file(args.config)
    else:
        path = Path(args.ledger) if args.ledger is not None else ledger_path_beside(Path("cdk.json"))
        config, named = service_config(path, args.service), f"{path} (service {args.service})"
    region = pick_region(config, region, named)
    table_name = args.table or config.table_name
    return Context(config, path, region, endpoint_url, table_name, from_ledger=args.service is not None)


if __name__ == "__main__":
    sys.exit(main())
