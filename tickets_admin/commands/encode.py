from __future__ import annotations

import argparse

from tickets.opaque import OpaqueKeyError

from ..opaque_secret import KEY_FILE, codec_arguments, keys_named, opaque_codec
from ..registry import Command, Context, whole_number
from ..table import AdminError

TEXT = f"""\
print the id of each TICKET of the opaque counter KEY

Under its keyVersion (or --key-version); a ticket has an id whether or not it was issued.

{KEY_FILE}

examples:
  .venv/bin/python -m tickets_admin encode orders 5000                    # the keys from the service's parameter
  .venv/bin/python -m tickets_admin encode orders 5000 5001 --key-file tickets-keys.json --key-version 2"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    codec_arguments(parser)
    parser.add_argument("tickets", metavar="TICKET", nargs="+", type=whole_number, help="a ticket (0 or more)")
    parser.add_argument("--key-version", type=int, metavar="N", help="default: the counter's keyVersion")


def _encode(args: argparse.Namespace, context: Context) -> int:
    ids = opaque_codec(args, context)
    version = ids.config.key_version if args.key_version is None else args.key_version
    size, versions = ids.config.ids_per_version, ids.config.key_versions
    if not 1 <= version <= versions:
        raise AdminError(f"--key-version {version}: the ids of {args.key} have key versions 1 to {versions}")
    lines = []
    for ticket in args.tickets:
        if ticket >= size:
            raise AdminError(f"ticket {ticket}: the ids of {args.key} hold tickets 0 to {size - 1}")
        try:
            lines.append(f"{ticket} -> {ids.encode(ticket, version)} (key version {version})")
        except OpaqueKeyError as err:
            raise AdminError(f"{keys_named(args)}: {err}") from None
    print("\n".join(lines))
    return 0


COMMAND = Command("encode", TEXT, _encode, _arguments)
