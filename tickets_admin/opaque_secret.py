"""The keys of a deployed service's opaque ids, in its SSM SecureString parameter (tickets_deploy.opaque_keys), with the
operator's credentials: read them (encode and decode without --key-file), and `.venv/bin/python -m tickets_admin
put-key`, which writes them to every region (docs/how-to/opaque-order-numbers.md). No key is ever printed, logged or put
in an error.

put-key makes every region's parameter hold the same keys: those any region holds already (a version two regions
hold with different keys is refused: their ids could meet), plus a new random key for each version the config's
counters ask for (their keyVersion) or --version names that no region holds. It reads every region before it writes
any, so a run that stopped half-way is finished by running it again: the versions made then are read back from the
regions it wrote, never made anew.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
from collections.abc import Mapping
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from tickets.botocore_session import new_session
from tickets.opaque import OpaqueKeyError, parse_keys
from tickets.opaque.secret import unlogged
from tickets_deploy.opaque_keys import NEW_KEY_BYTES, key_versions_in_use, opaque_keys_parameter

from .registry import Command, Context
from .table import AdminError

SSM_CONFIG = Config(connect_timeout=5, read_timeout=10, retries={"mode": "standard", "total_max_attempts": 5})
DESCRIPTION = (
    "the keys of Tickets' opaque ids (docs/how-to/opaque-order-numbers.md): written by "
    ".venv/bin/python -m tickets_admin put-key"
)


class KeysParameter:
    """One region's copy of a service's keys."""

    def __init__(self, table_name: str, region: str):
        self.name, self.region = opaque_keys_parameter(table_name), region
        self._client = new_session().create_client("ssm", region_name=region, config=SSM_CONFIG)

    def read(self) -> dict[int, bytes] | None:
        """The keys by version; None when the parameter does not exist."""
        try:
            with unlogged():
                text = self._client.get_parameter(Name=self.name, WithDecryption=True)["Parameter"]["Value"]
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ParameterNotFound":
                return None
            raise self._explain(err, "ssm:GetParameter (and kms:Decrypt on its key)") from None
        except (BotoCoreError, NoCredentialsError) as err:
            raise self._explain(err, "ssm:GetParameter") from None
        try:
            return parse_keys(text)
        except OpaqueKeyError:  # its message may quote the text: a key written where a version goes
            raise AdminError(
                f"{self.name} in {self.region} is not a JSON object of key versions to base64 keys of 16 to 64 "
                "bytes: put it right by hand (aws ssm put-parameter), or delete it if no id was made with it"
            ) from None

    def encryption_key(self) -> str | None:
        """The KMS key the parameter is encrypted with (kept when it is written again)."""
        try:
            found = self._client.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [self.name]}])
        except (ClientError, BotoCoreError) as err:
            raise self._explain(err, "ssm:DescribeParameters") from None
        key: str | None = next((each.get("KeyId") for each in found.get("Parameters", [])), None)
        return key

    def write(self, keys: Mapping[int, bytes], kms_key_id: str | None) -> None:
        value = json.dumps({str(version): base64.b64encode(key).decode() for version, key in sorted(keys.items())})
        request: dict[str, Any] = {"Name": self.name, "Value": value, "Type": "SecureString", "Overwrite": True}
        if kms_key_id:
            request["KeyId"] = kms_key_id
        try:
            with unlogged():
                self._client.put_parameter(Description=DESCRIPTION, Tier="Standard", **request)
        except (ClientError, BotoCoreError) as err:
            raise self._explain(err, "ssm:PutParameter (and kms:Encrypt on its key)") from None

    def _explain(self, err: Exception, needs: str) -> AdminError:
        if isinstance(err, NoCredentialsError):
            return AdminError("no AWS credentials found: set AWS_PROFILE, or sign in with aws sso login")
        code = err.response.get("Error", {}).get("Code", "") if isinstance(err, ClientError) else type(err).__name__
        return AdminError(f"{self.name} in {self.region}: {code} ({err}); your credentials need {needs} on it")


def deployed_keys(context: Context, region: str | None) -> dict[int, bytes]:
    """The keys of the service's parameter in `region` (default: the config's first), for encode and decode."""
    parameter = KeysParameter(context.table_name, region or context.region)
    keys = parameter.read()
    if keys is None:
        raise AdminError(
            f"{parameter.name} does not exist in {parameter.region}: put the keys there with "
            ".venv/bin/python -m tickets_admin put-key, or give a key file with --key-file PATH"
        )
    return keys


def _put_key(args: argparse.Namespace, context: Context) -> int:
    wanted = key_versions_in_use(context.config)
    if not wanted:
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
    for parameter in parameters:
        versions = ", ".join(map(str, sorted(keys)))
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
    """Every version any region holds, refused when two regions hold one version with different keys."""
    keys: dict[int, bytes] = {}
    holder: dict[int, str] = {}
    for region, region_keys in sorted(held.items()):
        for version, key in (region_keys or {}).items():
            if version in keys and keys[version] != key:
                raise AdminError(
                    f"{name}: key version {version} differs between {holder[version]} and {region} (put-key never "
                    "writes it so), and ids those regions made with it may be equal. Nothing was written. Make both "
                    "hold one key for it by hand (aws ssm put-parameter), see docs/how-to/opaque-order-numbers.md"
                )
            keys.setdefault(version, key)
            holder.setdefault(version, region)
    return keys


PUT_KEY_DESCRIPTION = """\
Put the keys of the opaque counters' ids in the service's SSM SecureString parameter,
/tickets/<tableName>/opaque-keys, in every region of cdk.json: the function reads it at
cold start (its name is in the function's environment; its value never is). Every region
gets the same keys, those any region holds already and a new random key (32 bytes from
the system's secure source) for each key version the counters' keyVersion, or --version,
asks for that no region holds. An existing version's key is never changed (ids made with
it must decode forever). Every region is read before any is written: run it again after a
failure to finish. Prints the versions each region holds, never a key. Your credentials
need ssm:GetParameter, ssm:PutParameter and ssm:DescribeParameters on the parameter, and
the KMS key's use (with --kms-key-id: your TicketService's encryption_key, the same alias
in every region). Rotation: raise a counter's keyVersion in cdk.json, run put-key, then
synthesise and deploy."""

PUT_KEY_EPILOG = """\
examples:
  .venv/bin/python -m tickets_admin put-key                       # before the first deploy of an opaque counter
  .venv/bin/python -m tickets_admin put-key --kms-key-id alias/shop-tickets
  .venv/bin/python -m tickets_admin --service shop-order-numbers put-key --version 2"""


def _put_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--version",
        type=int,
        action="append",
        metavar="N",
        help="also make key version N when no region holds it (repeatable; default: the counters' keyVersion)",
    )
    parser.add_argument(
        "--kms-key-id",
        default=None,
        metavar="KEY",
        help="the KMS key to encrypt the parameter with (default: the one it has, else SSM's own, aws/ssm)",
    )


COMMAND = Command(
    "put-key",
    "put the opaque ids' keys in the service's SSM parameter, in every region",
    PUT_KEY_DESCRIPTION,
    PUT_KEY_EPILOG,
    _put_key,
    _put_key_arguments,
    uses_table=False,
)
