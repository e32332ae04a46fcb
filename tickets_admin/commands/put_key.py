from __future__ import annotations

import argparse
import secrets
from collections.abc import Mapping

from tickets_deploy.opaque_keys import NEW_KEY_BYTES, key_versions_in_use

from ..opaque_secret import KeysParameter
from ..registry import Command, Context
from ..table import AdminError

TEXT = """\
put the opaque ids' keys in the service's SSM parameter, in every region

/tickets/<tableName>/opaque-keys in every region of cdk.json gets the keys any region holds and
a new random key for each key version the counters (or --version) ask for that none holds; no
key ever changes. Every region is read before any is written (run it again to finish). Prints
versions, never keys. Needs ssm:GetParameter, PutParameter, DescribeParameters and the KMS key
(--kms-key-id: e.g. TicketService's encryption_key; docs/how-to/opaque-order-numbers.md).

examples:
  .venv/bin/python -m tickets_admin put-key                       # before the first deploy of an opaque counter
  .venv/bin/python -m tickets_admin put-key --kms-key-id alias/shop-tickets
  .venv/bin/python -m tickets_admin --service shop-order-numbers put-key --version 2"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", type=int, action="append", metavar="N", help="also key version N (repeatable)")
    parser.add_argument("--kms-key-id", metavar="KEY", help="default: the parameter's key, else aws/ssm")


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


COMMAND = Command("put-key", TEXT, _put_key, _arguments, one_region=False)
