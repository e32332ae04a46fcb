from __future__ import annotations

import argparse

from tickets.opaque import OpaqueKeyError
from tickets_deploy.opaque_decode import OpaqueIdError

from ..opaque_secret import KEY_FILE, codec_arguments, keys_named, opaque_codec
from ..registry import Command, Context
from ..table import AdminError

TEXT = f"""\
print the ticket and key version of each ID of the opaque counter KEY

Base32 ids are read as Crockford's (any case, I and L as 1, O as 0, hyphens ignored); a wrong
width, character or check character (a typo, two swapped) is refused.

{KEY_FILE}

examples:
  .venv/bin/python -m tickets_admin decode orders 4829173650              # the keys from the service's parameter
  .venv/bin/python -m tickets_admin --service shop decode orders 4829173650 0411372659 --key-file tickets-keys.json"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    codec_arguments(parser)
    parser.add_argument("ids", metavar="ID", nargs="+", help="an id the counter answered")


def _decode(args: argparse.Namespace, context: Context) -> int:
    ids = opaque_codec(args, context)
    lines = []
    for text in args.ids:
        try:
            ticket, version = ids.decode(text)
        except OpaqueIdError as err:
            raise AdminError(f"not an id of {args.key}: {err}") from None
        except OpaqueKeyError as err:
            raise AdminError(f"{text}: {keys_named(args)}: {err}") from None
        lines.append(f"{text} -> ticket {ticket} (key version {version})")
    print("\n".join(lines))
    return 0


COMMAND = Command("decode", TEXT, _decode, _arguments)
