"""The deployment config (cdk.json context `tickets`) and the handler's view of it.

`parse_config` validates what an operator wrote; `handler_environment` turns it into
the environment of one region's function. The stack and the local server both call
`handler_environment`, so the deployed and the local handler see the same settings;
`load_config_file` reads cdk.json for the local server and tickets_admin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .keys import KEY_RULE, MAX_BLOCK, is_valid_key
from .tables import IDEMPOTENCY_TABLE_SUFFIX

MAX_SAFE_INTEGER = 2**53 - 1  # exact in every JSON parser
MAX_TICKET = 2**63 - 1  # DynamoDB stores more, but most callers keep tickets in an int64
MAX_SHARDS = 100  # /_counters reads all of a key's lanes with one BatchGetItem: at most 100 keys
AUTH_TYPES = ("AWS_IAM", "NONE")
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
# The regions the stack can serve: those where AWS publishes the Powertools for AWS Lambda (Python) v3
# layer it uses (account 017000801446, commercial partition `aws`). From the region matrix of
# aws-powertools/powertools-lambda-python .github/workflows/reusable_deploy_v3_layer_stack.yml,
# plus ap-southeast-5, ap-southeast-7 and mx-central-1 (that repository's issues #5383, #6076,
# #6075, done in 2025); checked November 2026, when ap-southeast-6 (#7355), ap-east-2 and
# eusc-de-east-1 (#8000) had no layer. The China and GovCloud layers live in other partitions
# and accounts, which stacks/powertools.py does not use. Add a region here once AWS lists it.
POWERTOOLS_LAYER_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)
_OTHER_PARTITIONS = {"cn-": "aws-cn", "us-gov-": "aws-us-gov", "us-iso": "an isolated partition", "eusc-": "aws-eusc"}
SETTINGS_ENV = "TICKETS_SETTINGS"
COUNTER_TABLE_ENV = "TICKETS_TABLE"
IDEMPOTENCY_TABLE_ENV = "TICKETS_IDEMPOTENCY_TABLE"
MAX_SETTINGS_BYTES = 3072  # Lambda allows 4 KB of environment in all; leave room for the rest
DEFAULT_TABLE_NAME = "tickets-counters"
# DynamoDB's rule is 3-255 characters; the local server appends IDEMPOTENCY_TABLE_SUFFIX, which must fit too.
TABLE_NAME_PATTERN = re.compile(rf"[A-Za-z0-9_.-]{{3,{255 - len(IDEMPOTENCY_TABLE_SUFFIX)}}}")
# start, stride and max may be written as decimal strings: the CDK CLI reads cdk.json in Node, whose
# numbers are doubles, so a JSON number above MAX_SAFE_INTEGER reaches app.py already rounded.
DECIMAL_PATTERN = re.compile(r"0|[1-9][0-9]{0,19}")


class ConfigError(ValueError):
    """An invalid deployment config; the message names the field and the rule."""


@dataclass(frozen=True)
class CounterConfig:
    start: int = 1
    stride: int = 1
    max: int = MAX_SAFE_INTEGER
    shards: int = 1
    max_block: int | None = None  # the most tickets one /_blocks request may take; None: the deployment's

    def to_json(self) -> dict[str, int]:
        encoded = {"start": self.start, "stride": self.stride, "max": self.max, "shards": self.shards}
        if self.max_block is not None:
            encoded["maxBlock"] = self.max_block
        return encoded

    @classmethod
    def from_json(cls, raw: Mapping[str, int]) -> CounterConfig:
        return cls(
            start=raw["start"],
            stride=raw["stride"],
            max=raw["max"],
            shards=raw["shards"],
            max_block=raw.get("maxBlock"),
        )


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


@dataclass(frozen=True)
class Settings:
    """What one region's handler needs to know, carried in its environment."""

    region_slot: int = 0
    region_slots: int = 1
    default_key: str = "default"
    strict_keys: bool = False
    counters: Mapping[str, CounterConfig] = field(default_factory=dict)
    idempotency_expiry_seconds: int = 3600
    max_block: int = MAX_BLOCK

    def block_limit(self, counter: CounterConfig) -> int:
        """The most tickets one range block of this counter may hold."""
        return counter.max_block if counter.max_block is not None else self.max_block

    def counter(self, key: str) -> CounterConfig | None:
        """The key's config; None when strictKeys forbids a key nobody configured."""
        if key in self.counters:
            return self.counters[key]
        if self.strict_keys and key != self.default_key:
            return None
        return CounterConfig()

    def to_json(self) -> str:
        return json.dumps(
            {
                "regionSlot": self.region_slot,
                "regionSlots": self.region_slots,
                "defaultKey": self.default_key,
                "strictKeys": self.strict_keys,
                "counters": {key: c.to_json() for key, c in self.counters.items()},
                "idempotencyExpirySeconds": self.idempotency_expiry_seconds,
                "maxBlock": self.max_block,
            },
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Settings:
        raw = json.loads(text)
        return cls(
            region_slot=raw["regionSlot"],
            region_slots=raw["regionSlots"],
            default_key=raw["defaultKey"],
            strict_keys=raw["strictKeys"],
            counters={key: CounterConfig.from_json(c) for key, c in raw["counters"].items()},
            idempotency_expiry_seconds=raw["idempotencyExpirySeconds"],
            max_block=raw["maxBlock"],
        )


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
    )


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
        "POWERTOOLS_SERVICE_NAME": "tickets",
        "POWERTOOLS_METRICS_NAMESPACE": "Tickets",
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
        _require_servable_region(region, where)
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
    )


def _parse_counter(key: str, raw: Any, deployment_max_block: int) -> CounterConfig:
    where = f"tickets.counters.{key}"
    if not is_valid_key(key):
        raise ConfigError(f"{where}: {key!r} is not a valid key ({KEY_RULE})")
    _require_object(raw, where, _COUNTER_FIELDS)
    start = _exact_integer(raw, "start", 1, low=0, high=MAX_TICKET, where=where)
    stride = _exact_integer(raw, "stride", 1, low=1, high=MAX_TICKET, where=where)
    maximum = _exact_integer(raw, "max", MAX_SAFE_INTEGER, low=0, high=MAX_TICKET, where=where)
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


def _require_servable_region(region: Any, where: str) -> None:
    if not isinstance(region, str) or region not in POWERTOOLS_LAYER_REGIONS:
        partition = next(
            (
                name
                for prefix, name in _OTHER_PARTITIONS.items()
                if isinstance(region, str) and region.startswith(prefix)
            ),
            None,
        )
        if partition is not None:
            why = (
                f"it is in the {partition} partition, and the stack uses the Powertools layer that AWS "
                "publishes in the commercial partition only"
            )
        elif isinstance(region, str) and re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d+", region):
            why = (
                "it is not a region, or the Powertools layer the stack uses is not published there yet "
                "(POWERTOOLS_LAYER_REGIONS in lambda_src/tickets/config.py says where it is)"
            )
        else:
            why = "it is not a region name such as us-east-1"
        raise ConfigError(
            f"{where}: the stack cannot be deployed to {region!r}: {why} "
            f"(the stack serves: {', '.join(sorted(POWERTOOLS_LAYER_REGIONS))})"
        )


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


def _exact_integer(raw: Mapping[str, Any], name: str, default: int, *, low: int, high: int, where: str) -> int:
    """A whole number written as a JSON number up to MAX_SAFE_INTEGER, or as a decimal string."""
    value = raw.get(name, default)
    if isinstance(value, str) and DECIMAL_PATTERN.fullmatch(value):
        value = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER:
        raise ConfigError(
            f"{where}.{name}: a JSON number above 2^53-1 ({MAX_SAFE_INTEGER}) is not exact: the CDK CLI reads "
            f"cdk.json in Node, which rounds it (this one arrived as {value}); write the value you meant as a "
            f'decimal string, in quotes: "{name}": "<digits>"'
        )
    elif isinstance(value, float):
        raise ConfigError(
            f"{where}.{name}: must be a whole number from {low} to {high} written without fraction or exponent "
            f'(a value above 2^53-1 as a decimal string in quotes, e.g. "36028797018963969"), got {value!r}'
        )
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(
            f"{where}.{name}: must be a whole number from {low} to {high} (as a JSON number "
            f"up to {MAX_SAFE_INTEGER}, or a decimal string), got {value!r}"
        )
    return value
