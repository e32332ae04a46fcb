"""cdk.json's `tickets` config: what an operator may write, and each region's handler environment.

`parse_config` validates what an operator wrote; `handler_environment` turns it into the environment
of one region's function (tickets.settings is what the function reads back). The stack and the local
server both call `handler_environment`, so the deployed and the local handler see the same settings;
`load_config_file` reads cdk.json for the local server and tickets_admin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickets.keys import KEY_RULE, MAX_BLOCK, is_valid_key
from tickets.settings import (
    COUNTER_TABLE_ENV,
    IDEMPOTENCY_TABLE_ENV,
    MAX_SAFE_INTEGER,
    SETTINGS_ENV,
    CounterConfig,
    Settings,
)
from tickets.tables import IDEMPOTENCY_TABLE_SUFFIX

from .regions import refusal

MAX_TICKET = 2**63 - 1  # DynamoDB stores more, but most callers keep tickets in an int64
MAX_SHARDS = 100  # /_counters reads all of a key's lanes with one BatchGetItem: at most 100 keys
AUTH_TYPES = ("AWS_IAM", "NONE")
# CloudWatch Logs' retention periods (AWS::Logs::LogGroup RetentionInDays), in days.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
MAX_SETTINGS_BYTES = 3072  # Lambda allows 4 KB of environment in all; leave room for the rest
DEFAULT_TABLE_NAME = "tickets-counters"
# DynamoDB's rule is 3-255 characters; the local server appends IDEMPOTENCY_TABLE_SUFFIX, which must fit too.
TABLE_NAME_PATTERN = re.compile(rf"[A-Za-z0-9_.-]{{3,{255 - len(IDEMPOTENCY_TABLE_SUFFIX)}}}")
# start, stride and max may be written as decimal strings: the CDK CLI reads cdk.json in Node, whose
# numbers are doubles, so a JSON number above MAX_SAFE_INTEGER reaches app.py already rounded.
DECIMAL_PATTERN = re.compile(r"0|[1-9][0-9]{0,19}")
# `callers`: another account, by its id, or one of its IAM roles (commercial partition; IAM's name characters).
ACCOUNT_ID_PATTERN = re.compile(r"[0-9]{12}")
ROLE_ARN_PATTERN = re.compile(r"arn:aws:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}")


class ConfigError(ValueError):
    """An invalid deployment config; the message names the field and the rule."""


@dataclass(frozen=True)
class DeploymentConfig:
    regions: Mapping[str, int]
    table_name: str = DEFAULT_TABLE_NAME
    default_key: str = "default"
    auth: str = "AWS_IAM"
    region_slots: int = 1
    strict_keys: bool = False
    counters: Mapping[str, CounterConfig] = field(default_factory=dict)
    reserved_concurrency: int | None = None
    idempotency_expiry_seconds: int = 3600
    log_retention_days: int = 30
    cors_origins: tuple[str, ...] = ()
    alarm_email: str | None = None
    max_block: int = MAX_BLOCK
    callers: tuple[str, ...] = ()  # account ids and role ARNs the function's resource policy admits
    compat_path: str | None = None  # config `compat.path`: the compatibility route's path segment; None: off


def region_settings(config: DeploymentConfig, region: str) -> Settings:
    """What the function of `region` knows of the deployment."""
    if region not in config.regions:
        raise ConfigError(f"regions: {region!r} is not configured (configured: {sorted(config.regions)})")
    return Settings(
        region_slot=config.regions[region],
        region_slots=config.region_slots,
        default_key=config.default_key,
        strict_keys=config.strict_keys,
        counters=config.counters,
        idempotency_expiry_seconds=config.idempotency_expiry_seconds,
        max_block=config.max_block,
        compat_path=config.compat_path,
    )


# Powertools reads these when the function's code is imported; the alarms and dashboard use the same names.
SERVICE_NAME = "tickets"
METRICS_NAMESPACE = "Tickets"
POWERTOOLS_ENVIRONMENT = {"POWERTOOLS_SERVICE_NAME": SERVICE_NAME, "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE}


def handler_environment(
    config: DeploymentConfig, region: str, *, counter_table: str, idempotency_table: str
) -> dict[str, str]:
    """The function's environment for `region`, with the names of the tables it is to use."""
    encoded = region_settings(config, region).to_json()
    if len(encoded.encode()) > MAX_SETTINGS_BYTES:
        raise ConfigError(
            f"tickets.counters: {len(config.counters)} counters need {len(encoded)} bytes of "
            f"the function's environment, over the {MAX_SETTINGS_BYTES} it can spare; "
            "configure only keys that need a non-default start, stride, max or shards"
        )
    return {
        SETTINGS_ENV: encoded,
        COUNTER_TABLE_ENV: counter_table,
        IDEMPOTENCY_TABLE_ENV: idempotency_table,
        **POWERTOOLS_ENVIRONMENT,
    }


# --- parsing -------------------------------------------------------------------------------------

_FIELDS = {
    "defaultKey",
    "auth",
    "regions",
    "regionSlots",
    "strictKeys",
    "counters",
    "reservedConcurrency",
    "idempotencyExpirySeconds",
    "logRetentionDays",
    "corsOrigins",
    "alarmEmail",
    "tableName",
    "maxBlock",
    "callers",
    "compat",
}
_COUNTER_FIELDS = {"start", "stride", "max", "shards", "maxBlock"}


def load_config_file(path: str | Path) -> DeploymentConfig:
    """Read a cdk.json and parse its `context.tickets`; ConfigError with a message a user can act on.
    JSON integers are read exactly, so a number the CDK CLI would round is refused here too."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found; run from the repository root or pass --config PATH") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read it ({err})") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: not valid JSON ({err})") from None
    context = document.get("context") if isinstance(document, dict) else None
    try:
        return parse_config((context or {}).get("tickets"))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def pick_region(config: DeploymentConfig, region: str | None, source: str | Path = "cdk.json") -> str:
    """`region`, or the first configured one when None; a region must be configured: its slot decides
    which tickets are its own."""
    if region is None:
        return next(iter(config.regions))
    if region not in config.regions:
        raise ConfigError(
            f"region {region!r} is not in {source} (configured: {', '.join(config.regions)}); "
            "its slot comes from tickets.regions"
        )
    return region


def parse_config(raw: Any) -> DeploymentConfig:
    if raw is None:
        raise ConfigError('tickets: missing; add a "tickets" object to the context in cdk.json')
    _require_object(raw, "tickets", _FIELDS)

    region_slots = _integer(raw, "regionSlots", 1, low=1, high=1000)
    regions = raw.get("regions")
    if not isinstance(regions, dict) or not regions:
        raise ConfigError('tickets.regions: must map at least one region name to its slot, e.g. {"us-east-1": 0}')
    owners: dict[int, str] = {}
    for region, slot in regions.items():
        where = f"tickets.regions.{region}"
        why_not = refusal(region)
        if why_not is not None:
            raise ConfigError(f"{where}: {why_not}")
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < region_slots:
            raise ConfigError(
                f"{where}: slot must be a whole number from 0 to regionSlots-1 ({region_slots - 1}), got {slot!r}; "
                "regionSlots is permanent once a key issued tickets, so give the region a free slot"
            )
        if slot in owners:
            raise ConfigError(
                f"{where}: slot {slot} is already used by {owners[slot]}; "
                "two regions sharing a slot would issue the same tickets"
            )
        owners[slot] = region

    default_key = raw.get("defaultKey", "default")
    if not is_valid_key(default_key):
        raise ConfigError(f"tickets.defaultKey: {default_key!r} is not a valid key ({KEY_RULE})")

    auth = raw.get("auth", "AWS_IAM")
    if auth not in AUTH_TYPES:
        raise ConfigError(f"tickets.auth: must be one of {', '.join(AUTH_TYPES)}, got {auth!r}")

    strict_keys = raw.get("strictKeys", False)
    if not isinstance(strict_keys, bool):
        raise ConfigError(f"tickets.strictKeys: must be true or false, got {strict_keys!r}")

    counters_raw = raw.get("counters", {})
    if not isinstance(counters_raw, dict):
        raise ConfigError("tickets.counters: must be an object mapping keys to {start, stride, max, shards, maxBlock}")
    max_block = _integer(raw, "maxBlock", MAX_BLOCK, low=1, high=MAX_BLOCK)
    counters = {key: _parse_counter(key, value, max_block) for key, value in counters_raw.items()}

    reserved = raw.get("reservedConcurrency")
    if reserved is not None:
        reserved = _integer(raw, "reservedConcurrency", None, low=1, high=10000)

    retention = raw.get("logRetentionDays", 30)
    if retention not in LOG_RETENTION_DAYS or isinstance(retention, bool):
        raise ConfigError(
            f"tickets.logRetentionDays: must be one of CloudWatch's retention periods "
            f"{LOG_RETENTION_DAYS}, got {retention!r}"
        )

    cors = raw.get("corsOrigins", [])
    if not isinstance(cors, list) or not all(isinstance(o, str) and o for o in cors):
        raise ConfigError('tickets.corsOrigins: must be a list of origins such as "https://app.example.com"')

    table_name = raw.get("tableName", DEFAULT_TABLE_NAME)
    if not isinstance(table_name, str) or not TABLE_NAME_PATTERN.fullmatch(table_name):
        raise ConfigError(
            f"tickets.tableName: must be a DynamoDB table name, 3-243 characters from "
            f"A-Z a-z 0-9 _ . - (the local server appends {IDEMPOTENCY_TABLE_SUFFIX!r} for its "
            f"idempotency table), got {table_name!r}"
        )

    alarm_email = raw.get("alarmEmail")
    if alarm_email is not None and (not isinstance(alarm_email, str) or "@" not in alarm_email):
        raise ConfigError(f"tickets.alarmEmail: must be an e-mail address, got {alarm_email!r}")

    return DeploymentConfig(
        regions=dict(regions),
        table_name=table_name,
        default_key=default_key,
        auth=auth,
        region_slots=region_slots,
        strict_keys=strict_keys,
        counters=counters,
        reserved_concurrency=reserved,
        idempotency_expiry_seconds=_integer(raw, "idempotencyExpirySeconds", 3600, low=60, high=7 * 86400),
        log_retention_days=retention,
        cors_origins=tuple(cors),
        alarm_email=alarm_email,
        max_block=max_block,
        callers=_parse_callers(raw.get("callers", []), auth),
        compat_path=_compat_path(raw.get("compat"), default_key, counters),
    )


def _parse_callers(raw: Any, auth: str) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise ConfigError(
            'tickets.callers: must be a list of account ids and role ARNs, e.g. ["111122223333", '
            f'"arn:aws:iam::444455556666:role/orders"], got {raw!r}'
        )
    for index, caller in enumerate(raw):
        where = f"tickets.callers[{index}]"
        if not isinstance(caller, str) or not (
            ACCOUNT_ID_PATTERN.fullmatch(caller) or ROLE_ARN_PATTERN.fullmatch(caller)
        ):
            raise ConfigError(
                f'{where}: must be a 12-digit account id such as "111122223333" or a role ARN such as '
                f'"arn:aws:iam::111122223333:role/NAME", got {caller!r}'
            )
        if caller in raw[:index]:
            raise ConfigError(f"{where}: {caller!r} is listed twice")
    if raw and auth != "AWS_IAM":
        raise ConfigError(
            f"tickets.callers: needs auth AWS_IAM (it grants IAM permissions); with auth {auth} anyone may call"
        )
    return tuple(raw)


def _compat_path(raw: Any, default_key: str, counters: Mapping[str, CounterConfig]) -> str | None:
    """`compat: {"path": "counter"}` turns on the compatibility route GET /counter?systemKey=X (the
    bare number, as the API Gateway counter pattern answers); absent, /counter is the key `counter`.
    The path is one segment shaped like a key, so it can never be _counters, _blocks or another route
    of ours (those start with `_`), and it may not hide the path of a key the config names. It is
    served literally (tickets.routes). With strictKeys false it hides the unconfigured key of its name
    from /path, which stays reachable as /?key=path (docs/migrating.md)."""
    if raw is None:
        return None
    _require_object(raw, "tickets.compat", {"path"})
    path = raw.get("path")
    if not is_valid_key(path):
        raise ConfigError(
            f"tickets.compat.path: must be one path segment of {KEY_RULE} (without slashes), "
            f'e.g. "counter", got {path!r}'
        )
    if path == default_key or path in counters:
        raise ConfigError(
            f"tickets.compat.path: {path!r} is a key this config names (defaultKey or counters); /{path} "
            "would stop reaching it: choose another path"
        )
    return path


def _parse_counter(key: str, raw: Any, deployment_max_block: int) -> CounterConfig:
    where = f"tickets.counters.{key}"
    if not is_valid_key(key):
        raise ConfigError(f"{where}: {key!r} is not a valid key ({KEY_RULE})")
    _require_object(raw, where, _COUNTER_FIELDS)
    start = exact_integer(raw.get("start", 1), low=0, high=MAX_TICKET, where=f"{where}.start")
    stride = exact_integer(raw.get("stride", 1), low=1, high=MAX_TICKET, where=f"{where}.stride")
    maximum = exact_integer(raw.get("max", MAX_SAFE_INTEGER), low=0, high=MAX_TICKET, where=f"{where}.max")
    shards = _integer(raw, "shards", 1, low=1, high=MAX_SHARDS, where=where)
    if maximum < start:
        raise ConfigError(f"{where}.max: must be >= start ({start}), got {maximum}")
    max_block = None
    if "maxBlock" in raw:  # lowers tickets.maxBlock for this key, never raises it
        max_block = _integer(raw, "maxBlock", None, low=1, high=MAX_BLOCK, where=where)
        if max_block > deployment_max_block:
            raise ConfigError(
                f"{where}.maxBlock: must be at most tickets.maxBlock ({deployment_max_block}), got {max_block}"
            )
    return CounterConfig(start=start, stride=stride, max=maximum, shards=shards, max_block=max_block)


def _require_object(raw: Any, where: str, allowed: set[str]) -> None:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown field (known: {', '.join(sorted(allowed))})")


def _integer(
    raw: Mapping[str, Any], name: str, default: int | None, *, low: int, high: int, where: str = "tickets"
) -> int:
    value = raw.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where}.{name}: must be a whole number from {low} to {high}, got {value!r}")
    return value


def exact_integer(value: Any, *, low: int, high: int, where: str) -> int:
    """A whole number from low to high, written as a JSON number up to MAX_SAFE_INTEGER or as a decimal
    string (any size); ConfigError naming `where` otherwise. cdk.json and the deployment ledger both use it."""
    if isinstance(value, str) and DECIMAL_PATTERN.fullmatch(value):
        value = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER:
        name = where.rpartition(".")[2]
        raise ConfigError(
            f"{where}: a JSON number above 2^53-1 ({MAX_SAFE_INTEGER}) is not exact: the CDK CLI reads "
            f"cdk.json in Node, which rounds it (this one arrived as {value}); write the value you meant as a "
            f'decimal string, in quotes: "{name}": "<digits>"'
        )
    elif isinstance(value, float):
        raise ConfigError(
            f"{where}: must be a whole number from {low} to {high} written without fraction or exponent "
            f'(a value above 2^53-1 as a decimal string in quotes, e.g. "36028797018963969"), got {value!r}'
        )
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(
            f"{where}: must be a whole number from {low} to {high} (as a JSON number "
            f"up to {MAX_SAFE_INTEGER}, or a decimal string), got {value!r}"
        )
    return value
