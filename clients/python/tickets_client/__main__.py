"""`python -m tickets_client`, or the command `tickets-client`: tickets or a counter's state from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from .client import FUNCTION_TIMEOUT_SECONDS, IN_PROGRESS_RETRY_SECONDS, TicketsClient
from .errors import TicketsError
from .version import __version__

DEFAULT_URL = "http://127.0.0.1:8000"
EPILOG = f"""\
examples:
  %(prog)s next orders --count 3 --text   # three tickets, one a line
  TICKETS_URL=https://abc123.lambda-url.us-east-1.on.aws %(prog)s state orders

A *.lambda-url.<region>.on.aws URL is signed with SigV4 (botocore's credentials), others only with --sign;
callers need lambda:InvokeFunctionUrl and lambda:InvokeFunction. `next` sends one Idempotency-Key for all
its retries; 409 in_progress is retried for the function's {FUNCTION_TIMEOUT_SECONDS} s timeout and a margin.
Errors print "error: <code>: <message>" on stderr and exit 1 (docs/reference/clients.md)."""
ATTEMPTS_HELP = f"""attempts per request for 429, 503, lost connections and (next only) 502 and 504 (default: 5); 409 \
in_progress is retried for up to {IN_PROGRESS_RETRY_SECONDS} s regardless"""


def main(argv: list[str] | None = None, prog: str = "python -m tickets_client") -> int:
    common = argparse.ArgumentParser(add_help=False)
    url = os.environ.get("TICKETS_URL", DEFAULT_URL)
    common.add_argument("--url", default=url, help=f"the Function URL (default: $TICKETS_URL, else {DEFAULT_URL})")
    common.add_argument("--sign", action=argparse.BooleanOptionalAction, help="SigV4 (default: only for Function URLs)")
    common.add_argument("--region", help="region for signing (default: the one in the Function URL)")
    common.add_argument("--timeout", type=float, default=5, help="seconds per attempt (default: 5)")
    common.add_argument("--max-attempts", type=int, default=5, help=ATTEMPTS_HELP)

    parser = argparse.ArgumentParser(
        prog=prog,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Get unique, increasing tickets from a Tickets server.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def subcommand(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[common], help=summary, description=summary)

    issue = subcommand("next", "issue the next ticket(s) of KEY and print the server's JSON")
    issue.add_argument("key", nargs="?", metavar="KEY", help="the counter (default: the deployment's defaultKey)")
    issue.add_argument("--count", type=int, default=1, help="how many tickets, 1..1000, in one request (default: 1)")
    issue.add_argument("--text", action="store_true", help="print the bare tickets, one a line")
    block = subcommand("block", "reserve COUNT tickets of KEY in one request; print first, last, step and count")
    block.add_argument("key", metavar="KEY", help="the counter")
    block.add_argument("--count", type=int, required=True, help="how many tickets, 1..1000000 (maxBlock may cap it)")
    state = subcommand("state", "print KEY's state (last ticket, step, config); issues nothing")
    state.add_argument("key", metavar="KEY", help="the counter")
    args = parser.parse_args(argv)
    try:
        client = TicketsClient(
            args.url, sign=args.sign, region=args.region, timeout=args.timeout, max_attempts=args.max_attempts
        )
        if args.command == "next" and args.text:
            print("\n".join(map(str, client.next(args.key, args.count))))
        elif args.command == "next":
            print(json.dumps(client.issue(args.key, args.count)))
        elif args.command == "block":
            print(json.dumps(dataclasses.asdict(client.block(args.key, args.count))))
        else:
            print(json.dumps(client.state(args.key), indent=2))
    except TicketsError as err:
        print(f"error: {err.code}: {err.message}", file=sys.stderr)
        return 1
    except ValueError as err:  # a URL or option the client cannot use
        print(f"error: usage: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def command() -> int:
    """The `tickets-client` console script (clients/python/pyproject.toml)."""
    return main(prog="tickets-client")


if __name__ == "__main__":
    sys.exit(main())
