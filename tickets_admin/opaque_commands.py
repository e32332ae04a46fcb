"""`.venv/bin/python -m tickets_admin encode KEY TICKET` and `decode KEY ID`: an opaque counter's tickets as its ids and
back (tickets.opaque), with the counter's settings from cdk.json (or --service's ledger) and the keys from a key
file or the service's parameter. Each reads the counter table's records of its key versions' fingerprints
(tickets/opaque/secret.py) and refuses a key that is not the one the table's ids of that version were made with;
neither writes."""

from __future__ import annotations

import argparse
from pathlib import Path

from tickets.opaque import OpaqueKeyError
from tickets.opaque.secret import replaced
from tickets.tables import FINGERPRINT_PREFIX
from tickets_deploy.opaque_decode import OpaqueCodec, OpaqueIdError
from tickets_deploy.opaque_keys import read_key_file

from .counter_commands import whole_number
from .opaque_secret import deployed_keys
from .registry import Command, Context
from .table import AdminError, CounterTable

KEY_FILE = """\
The keys are the deployed service's, read from its SSM parameter /tickets/<tableName>/
opaque-keys in --region (default: the first region of cdk.json) with your credentials
(ssm:GetParameter and its KMS key's kms:Decrypt), unless --key-file gives a file: the
local server's (its banner prints the path), or one of your own. Either is a JSON object
of key versions to keys, each 16 to 64 random bytes in base64 (32 recommended), one key
per version, e.g. {"1": "<44 characters>", "2": "..."}. Make one with:
  python -c "import base64, json, secrets; print(json.dumps({'1':
  base64.b64encode(secrets.token_bytes(32)).decode()}))" > tickets-keys.json
Keep it secret: whoever holds it can read the order of every id (not only decode one).
The counter table in --region (at --endpoint-url) must record no other key for a version
the keys hold (its fingerprint, recorded at the version's first use): --no-table-check
skips that, for a table that is gone (a local server's on moto)."""

ENCODE_DESCRIPTION = f"""\
Print the id of each TICKET of the opaque counter KEY (counters.KEY.opaque in cdk.json):
the keyed permutation its answers apply, under the counter's keyVersion (or --key-version).
A ticket has an id whether or not the counter issued it; the domain holds 0 .. M-1.

{KEY_FILE}"""

ENCODE_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin encode orders 5000                    # the keys from the service's parameter
  .venv/bin/python -m tickets_admin encode orders 5000 --key-file tickets-keys.json
  .venv/bin/python -m tickets_admin encode orders 5000 5001 --key-file tickets-keys.json --key-version 2
  .venv/bin/python -m tickets_admin --service shop encode orders 5000 --key-file tickets-keys.json"""

DECODE_DESCRIPTION = f"""\
Print the ticket and the key version of each ID of the opaque counter KEY (counters.KEY.opaque
in cdk.json). The key version is read off the id (ids of two versions never meet); the key
file must hold that version's key. Base32 ids are read as Crockford's: any case, I and L
as 1, O as 0, hyphens ignored. An id of the wrong width, with a character outside the
alphabet, or whose check character fails (a character mistyped, two swapped) is refused.

{KEY_FILE}"""

DECODE_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin decode orders 4829173650              # the keys from the service's parameter
  .venv/bin/python -m tickets_admin decode orders 4829173650 --key-file tickets-keys.json
  .venv/bin/python -m tickets_admin --service shop decode orders 4829173650 0411372659 --key-file tickets-keys.json"""


def load_keys(args: argparse.Namespace, context: Context) -> dict[int, bytes]:
    """The keys of the opaque ids: from --key-file, else the deployed service's parameter in --region."""
    if args.key_file is None:
        return deployed_keys(context, args.region)
    try:
        return read_key_file(args.key_file)
    except OpaqueKeyError as err:
        raise AdminError(f"--key-file {err}") from None


def _ids(args: argparse.Namespace, context: Context) -> OpaqueCodec:
    counter = context.config.counters.get(args.key)
    if counter is None or counter.opaque is None:
        raise AdminError(f"{args.key} is not an opaque counter in {context.config_file} (counters.{args.key}.opaque)")
    keys = load_keys(args, context)
    if not args.no_table_check:
        _check_fingerprints(keys, args, context)
    return OpaqueCodec(counter.opaque, keys, args.key)


def _check_fingerprints(keys: dict[int, bytes], args: argparse.Namespace, context: Context) -> None:
    """Refuse a key whose version the table recorded with another key's fingerprint: its ids are not the table's."""
    table = CounterTable(context.table_name, context.region, context.endpoint_url)
    try:
        with table.dynamodb_errors():
            items = {version: table.get(f"{FINGERPRINT_PREFIX}{version}") for version in sorted(keys)}
    except AdminError as err:
        raise AdminError(f"{err} (the keys' fingerprints are read there; --no-table-check skips it)") from None
    for version, item in items.items():
        problem = replaced(version, keys[version], item, _keys_named(args))
        if problem is not None:
            raise AdminError(problem)


def _keys_named(args: argparse.Namespace) -> str:
    """Where the keys came from, as an error names them."""
    return f"--key-file {args.key_file}" if args.key_file is not None else "the service's parameter"


def _encode(args: argparse.Namespace, context: Context) -> int:
    ids = _ids(args, context)
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
            raise AdminError(f"{_keys_named(args)}: {err}") from None
    print("\n".join(lines))
    return 0


def _decode(args: argparse.Namespace, context: Context) -> int:
    ids = _ids(args, context)
    lines = []
    for text in args.ids:
        try:
            ticket, version = ids.decode(text)
        except OpaqueIdError as err:
            raise AdminError(f"not an id of {args.key}: {err}") from None
        except OpaqueKeyError as err:
            raise AdminError(f"{text}: {_keys_named(args)}: {err}") from None
        lines.append(f"{text} -> ticket {ticket} (key version {version})")
    print("\n".join(lines))
    return 0


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", help="the opaque counter")
    parser.add_argument(
        "--key-file", type=Path, default=None, metavar="PATH", help="the keys, by version (the format below)"
    )
    parser.add_argument(
        "--no-table-check",
        action="store_true",
        help="do not read the counter table's fingerprints of the key versions (for a table that is gone)",
    )


def _encode_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument("tickets", metavar="TICKET", nargs="+", type=whole_number, help="a ticket (0 or more)")
    parser.add_argument(
        "--key-version",
        type=int,
        default=None,
        metavar="N",
        help="the key version to encode with (default: the counter's keyVersion)",
    )


def _decode_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument("ids", metavar="ID", nargs="+", help="an id the counter answered")


COMMANDS = (
    Command(
        "encode",
        "print the id of each TICKET of the opaque counter KEY",
        ENCODE_DESCRIPTION,
        ENCODE_EPILOG,
        _encode,
        _encode_arguments,
    ),
    Command(
        "decode",
        "print the ticket and key version of each ID of the opaque counter KEY",
        DECODE_DESCRIPTION,
        DECODE_EPILOG,
        _decode,
        _decode_arguments,
    ),
)
