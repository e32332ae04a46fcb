"""The keys of a service's opaque ids, for encode, decode and put-key: a key file, or the service's SSM SecureString
parameter in each region (tickets_deploy.opaque_keys). No key is ever printed, logged or put in an error."""

from __future__ import annotations

import argparse
import base64
import json
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
from tickets_deploy.opaque_decode import OpaqueCodec
from tickets_deploy.opaque_keys import opaque_keys_parameter, read_key_file

from .registry import Context
from .table import AdminError, operator_client

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
        key: str | None = next((each.get("KeyId") for each in found.get("Parameters", [])), None)
        return key

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
    keys = parameter.read()
    if keys is None:
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
    """KEY's ids, refused where the counter table recorded another key's fingerprint for a version."""
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
