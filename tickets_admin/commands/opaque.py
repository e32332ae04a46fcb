"""The opaque ids' commands: put-key writes their keys to the service's SSM SecureString parameter in each region;
encode and decode read them there, or in a key file (tickets_deploy.opaque_keys). No key is ever printed or logged."""

import argparse
import base64
import json
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from tickets.botocore_session import NO_CREDENTIALS
from tickets.dynamodb_errors import error_code
from tickets.opaque import OpaqueKeyError, parse_keys
from tickets.opaque.secret import read_secret, replaced, unlogged
from tickets.tables import FINGERPRINT_PREFIX
from tickets_deploy.opaque_decode import OpaqueCodec, OpaqueIdError
from tickets_deploy.opaque_keys import NEW_KEY_BYTES, key_versions_in_use, opaque_keys_parameter, read_key_file

from ..registry import Command, Context, whole_number
from ..table import AdminError, operator_client

DESCRIPTION = "the keys of Tickets' opaque ids, written by tickets_admin put-key (docs/how-to/opaque-order-numbers.md)"
KEY_FILE = """\
The keys: the service's SSM parameter /tickets/<tableName>/opaque-keys in --region (read with
ssm:GetParameter and kms:Decrypt), or --key-file: the local server's (its banner names it) or
a JSON object of key versions to base64 keys of 16 to 64 random bytes, {"1": "<44 characters>"}:
  python -c "import base64, json, secrets; print(json.dumps({'1':
  base64.b64encode(secrets.token_bytes(32)).decode()}))" > tickets-keys.json
Keep it secret. The counter table must record no other key's fingerprint for their versions
(--no-table-check: a table that is gone)."""


class KeysParameter:
    def __init__(self, table_name: str, region: str):
        self.name, self.region = opaque_keys_parameter(table_name), region
        self._client = operator_client("ssm", region)

    def read(self) -> dict[int, bytes] | None:
        """The keys by version; None when the parameter does not exist."""
        with self._calling("ssm:GetParameter (and kms:Decrypt on its key)"):
            try:
                text = read_secret(self.name, self._client)
            except ClientError as err:
                if error_code(err) != "ParameterNotFound":
                    raise
                return None
        try:
            return parse_keys(text)
        except OpaqueKeyError:  # its message may quote the text: a key written where a version goes
            raise AdminError(
                f"{self.name} in {self.region} is not a JSON object of key versions to base64 keys of 16 to 64 "
                "bytes: put it right by hand (aws ssm put-parameter), or delete it if no id was made with it"
            ) from None

    def encryption_key(self) -> str | None:
        """The KMS key the parameter is encrypted with (kept when it is written again)."""
        with self._calling("ssm:DescribeParameters"):
            found = self._client.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [self.name]}])
        return next((str(each["KeyId"]) for each in found.get("Parameters", []) if "KeyId" in each), None)

    def write(self, keys: Mapping[int, bytes], kms_key_id: str | None) -> None:
        value = json.dumps({str(version): base64.b64encode(key).decode() for version, key in sorted(keys.items())})
        request: dict[str, Any] = {"Name": self.name, "Value": value, "Type": "SecureString", "Overwrite": True}
        if kms_key_id:
            request["KeyId"] = kms_key_id
        with self._calling("ssm:PutParameter (and kms:Encrypt on its key)"), unlogged():
            self._client.put_parameter(Description=DESCRIPTION, Tier="Standard", **request)

    @contextmanager
    def _calling(self, needs: str) -> Iterator[None]:
        try:
            yield
        except NoCredentialsError:
            raise AdminError(NO_CREDENTIALS) from None
        except (ClientError, BotoCoreError) as err:
            code = error_code(err) if isinstance(err, ClientError) else type(err).__name__
            raise AdminError(f"{self.name} in {self.region}: {code} ({err}); your credentials need {needs}") from None


def deployed_keys(context: Context) -> dict[int, bytes]:
    parameter = KeysParameter(context.table_name, context.region)
    if (keys := parameter.read()) is None:
        raise AdminError(
            f"{parameter.name} does not exist in {parameter.region}: put the keys there with "
            ".venv/bin/python -m tickets_admin put-key, or give a key file with --key-file PATH"
        )
    return keys


def codec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", help="the opaque counter")
    parser.add_argument("--key-file", type=Path, metavar="PATH", help="the keys, by version (the format above)")
    parser.add_argument("--no-table-check", action="store_true", help="skip the table's fingerprints of the keys")


def keys_named(args: argparse.Namespace) -> str:
    return f"--key-file {args.key_file}" if args.key_file is not None else "the service's parameter"


def opaque_codec(args: argparse.Namespace, context: Context) -> OpaqueCodec:
    counter = context.config.counters.get(args.key)
    if counter is None or counter.opaque is None:
        raise AdminError(f"{args.key} is not an opaque counter in {context.config_file} (counters.{args.key}.opaque)")
    try:
        keys = deployed_keys(context) if args.key_file is None else read_key_file(args.key_file)
    except OpaqueKeyError as err:
        raise AdminError(f"--key-file {err}") from None
    if not args.no_table_check:
        table = context.counter_table()
        try:
            items = {version: table.get(f"{FINGERPRINT_PREFIX}{version}") for version in sorted(keys)}
        except AdminError as err:
            raise AdminError(f"{err} (the keys' fingerprints are read there; --no-table-check skips it)") from None
        for problem in (replaced(version, keys[version], item, keys_named(args)) for version, item in items.items()):
            if problem is not None:
                raise AdminError(problem)
    return OpaqueCodec(counter.opaque, keys, args.key)


PUT_KEY_TEXT = """\
put the opaque ids' keys in the service's SSM parameter, in every region

/tickets/<tableName>/opaque-keys in every region of cdk.json gets the keys any region holds and
a new random key for each key version the counters (or --version) ask for that none holds; no
key ever changes. Every region is read before any is written (run it again to finish). Prints
versions, never keys. Needs ssm:GetParameter, PutParameter, DescribeParameters and the KMS key
(--kms-key-id: e.g. TicketService's encryption_key; docs/how-to/opaque-order-numbers.md).

examples:
  .venv/bin/python -m tickets_admin put-key                       # before the first deploy of an opaque counter
  .venv/bin/python -m tickets_admin --service shop-order-numbers put-key --version 2"""


def _put_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", type=int, action="append", metavar="N", help="also key version N (repeatable)")
    parser.add_argument("--kms-key-id", metavar="KEY", help="default: the parameter's key, else aws/ssm")


def _put_key(args: argparse.Namespace, context: Context) -> int:
    if not (wanted := key_versions_in_use(context.config)):
        raise AdminError(f"no counter of {context.config_file} is opaque (counters.KEY.opaque): there is no key to put")
    most = max(counter.opaque.key_versions for counter in context.config.counters.values() if counter.opaque)
    for version in args.version or ():
        if not 1 <= version <= most:
            raise AdminError(f"--version {version}: the counters' ids have key versions 1 to {most} (keyVersions)")
        wanted.add(version)
    parameters = [KeysParameter(context.table_name, region) for region in sorted(context.config.regions)]
    held = {parameter.region: parameter.read() for parameter in parameters}  # every region read before any write
    keys = _union(held, parameters[0].name)
    made = sorted(version for version in wanted if version not in keys)
    keys.update({version: secrets.token_bytes(NEW_KEY_BYTES) for version in made})
    versions = ", ".join(map(str, sorted(keys)))
    for parameter in parameters:
        if held[parameter.region] == keys:
            print(f"{parameter.region}: {parameter.name} holds key versions {versions}: unchanged")
            continue
        kept = parameter.encryption_key() if held[parameter.region] is not None else None
        parameter.write(keys, args.kms_key_id or kept)
        print(f"{parameter.region}: {parameter.name} now holds key versions {versions}")
    if made:
        print(f"new: key version(s) {', '.join(map(str, made))}, {NEW_KEY_BYTES} random bytes each (never printed)")
    return 0


def _union(held: Mapping[str, dict[int, bytes] | None], name: str) -> dict[int, bytes]:
    keys: dict[int, bytes] = {}
    holder: dict[int, str] = {}
    for region, region_keys in sorted(held.items()):
        for version, key in (region_keys or {}).items():
            if keys.setdefault(version, key) != key:
                raise AdminError(
                    f"{name}: key version {version} differs between {holder[version]} and {region}: ids may meet. "
                    "Nothing was written. Make both hold one key by hand (docs/how-to/opaque-order-numbers.md)"
                )
            holder.setdefault(version, region)
    return keys


ENCODE_TEXT = f"""\
print the id of each TICKET of the opaque counter KEY

Under its keyVersion (or --key-version); a ticket has an id whether or not it was issued.

{KEY_FILE}

examples:
  .venv/bin/python -m tickets_admin encode orders 5000                    # the keys from the service's parameter
  .venv/bin/python -m tickets_admin encode orders 5000 5001 --key-file tickets-keys.json --key-version 2"""


def _encode_arguments(parser: argparse.ArgumentParser) -> None:
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


DECODE_TEXT = f"""\
print the ticket and key version of each ID of the opaque counter KEY

Base32 ids are read as Crockford's (any case, I and L as 1, O as 0, hyphens ignored); a wrong
width, character or check character (a typo, two swapped) is refused.

{KEY_FILE}

examples:
  .venv/bin/python -m tickets_admin decode orders 4829173650              # the keys from the service's parameter
  .venv/bin/python -m tickets_admin --service shop decode orders 4829173650 0411372659 --key-file tickets-keys.json"""


def _decode_arguments(parser: argparse.ArgumentParser) -> None:
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


COMMANDS = (
    Command("decode", DECODE_TEXT, _decode, _decode_arguments),
    Command("encode", ENCODE_TEXT, _encode, _encode_arguments),
    Command("put-key", PUT_KEY_TEXT, _put_key, _put_key_arguments, one_region=False),
)
