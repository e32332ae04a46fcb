"""cdk.json's `tickets` config: what an operator may write, and each region's handler environment.

`parse_config` validates what an operator wrote; `handler_environment` turns it into the environment
of one region's function (tickets.settings is what the function reads back). The stack and the local
server both call `handler_environment`, so the deployed and the local handler see the same settings;
`load_config_file` reads cdk.json for the local server and tickets_admin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickets.access import Rules
from tickets.keys import KEY_RULE, MAX_BLOCK, is_valid_key
from tickets.series.config import SeriesConfig, SeriesConfigError, parse_series
from tickets.settings import (
    COUNTER_TABLE_ENV,
    IDEMPOTENCY_TABLE_ENV,
    MAX_SAFE_INTEGER,
    SERIES_TABLE_ENV,
    SETTINGS_ENV,
    CounterConfig,
    Settings,
)
from tickets.tables import IDEMPOTENCY_TABLE_SUFFIX

from .access import AccessRuleError, parse_access
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
    """A parsed `tickets` config (FIELDS defines each attribute, its default and its rule)."""

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
    series: Mapping[str, SeriesConfig] = field(default_factory=dict)  # config `series`: journaled series by key
    access: Rules | None = None  # config `access` (tickets_deploy/access.py); None: every invoker may do everything


def region_settings(config: DeploymentConfig, region: str) -> Settings:
    """What the function of `region` knows of the deployment: its slot and every field marked `setting`."""
    if region not in config.regions:
        raise ConfigError(f"regions: {region!r} is not configured (configured: {sorted(config.regions)})")
    carried = {each.attribute: getattr(config, each.attribute) for each in FIELDS if each.setting}
    return Settings(region_slot=config.regions[region], **carried)


# Powertools reads these when the function's code is imported; the alarms and dashboard use the same names.
SERVICE_NAME = "tickets"
METRICS_NAMESPACE = "Tickets"
POWERTOOLS_ENVIRONMENT = {"POWERTOOLS_SERVICE_NAME": SERVICE_NAME, "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE}


def handler_environment(
    config: DeploymentConfig,
    region: str,
    *,
    counter_table: str,
    idempotency_table: str,
    service_name: str = SERVICE_NAME,
    series_table: str | None = None,
) -> dict[str, str]:
    """The function's environment for `region`, with the names of the tables it is to use (the series
    table's when series are configured) and the service name its metrics and logs carry (the metrics'
    `service` dimension: one per deployed service)."""
    if config.series and series_table is None:
        raise ConfigError("tickets.series: series are configured, so the function needs its series table's name")
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
        **({SERIES_TABLE_ENV: series_table} if config.series and series_table else {}),
        **POWERTOOLS_ENVIRONMENT,
        "POWERTOOLS_SERVICE_NAME": service_name,
    }


# --- the fields ----------------------------------------------------------------------------------

# A field's parser: (the value as written, or the field's default when absent; the fields parsed before it,
# by attribute; where it was written, for messages) -> the parsed value, or ConfigError naming `where`.
Parser = Callable[[Any, Mapping[str, Any], str], Any]


@dataclass(frozen=True)
class Field:
    """One setting, defined once: cdk.json's `tickets` object (`name`), the construct's keyword prop
    (`prop`, on `owner`), the parsed DeploymentConfig (`attribute`), whether the function's settings
    carry it (`setting`), its default, its rule (`parse`) and the README's row (`default_doc`, `doc`,
    `permanent`)."""

    name: str
    prop: str
    attribute: str
    default: Any
    default_doc: str
    doc: str
    parse: Parser
    permanent: bool = False
    setting: bool = False
    owner: str = "TicketService"
    prop_doc: str = ""  # how the prop differs from the cdk.json field, when it does
    needs: tuple[str, ...] = ()  # the attributes of the fields its rule reads, parsed before it

    def readme_row(self, prefix: str = "", prop_prefix: str = "") -> str:
        permanent = " **Permanent**" if self.permanent else ""
        prop = f"`{prop_prefix}{self.prop}`" if self.owner == "TicketService" else f"`{self.owner}(…, {self.prop}=…)`"
        if self.prop_doc:
            prop += f" ({self.prop_doc})"
        return f"| `{prefix}{self.name}` | {prop} | {self.default_doc} | {self.doc}{permanent} |"


def _region_slots(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    return _whole_number(value, where, low=1, high=1000)


def _regions(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, int]:
    region_slots = parsed["region_slots"]
    if not isinstance(value, dict) or not value:
        raise ConfigError(f'{where}: must map at least one region name to its slot, e.g. {{"us-east-1": 0}}')
    owners: dict[int, str] = {}
    for region, slot in value.items():
        at = f"{where}.{region}"
        why_not = refusal(region)
        if why_not is not None:
            raise ConfigError(f"{at}: {why_not}")
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < region_slots:
            raise ConfigError(
                f"{at}: slot must be a whole number from 0 to regionSlots-1 ({region_slots - 1}), got {slot!r}; "
                "regionSlots is permanent once a key issued tickets, so give the region a free slot"
            )
        if slot in owners:
            raise ConfigError(
                f"{at}: slot {slot} is already used by {owners[slot]}; "
                "two regions sharing a slot would issue the same tickets"
            )
        owners[slot] = region
    return dict(value)


def _table_name(value: Any, parsed: Mapping[str, Any], where: str) -> str:
    if not isinstance(value, str) or not TABLE_NAME_PATTERN.fullmatch(value):
        raise ConfigError(
            f"{where}: must be a DynamoDB table name, 3-243 characters from "
            f"A-Z a-z 0-9 _ . - (the local server appends {IDEMPOTENCY_TABLE_SUFFIX!r} for its "
            f"idempotency table), got {value!r}"
        )
    return value


def _default_key(value: Any, parsed: Mapping[str, Any], where: str) -> str:
    if not is_valid_key(value):
        raise ConfigError(f"{where}: {value!r} is not a valid key ({KEY_RULE})")
    return str(value)


def _auth(value: Any, parsed: Mapping[str, Any], where: str) -> str:
    if value not in AUTH_TYPES:
        raise ConfigError(f"{where}: must be one of {', '.join(AUTH_TYPES)}, got {value!r}")
    return str(value)


def _strict_keys(value: Any, parsed: Mapping[str, Any], where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: must be true or false, got {value!r}")
    return value


def _max_block(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    return _whole_number(value, where, low=1, high=MAX_BLOCK)


def _counters(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, CounterConfig]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be an object mapping keys to {{start, stride, max, shards, maxBlock}}")
    return {key: _parse_counter(key, counter, parsed["max_block"], f"{where}.{key}") for key, counter in value.items()}


def _series(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, SeriesConfig]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be an object mapping names to series (docs/series.md)")
    counters = {*parsed["counters"], parsed["default_key"]}
    series = {}
    for key, raw in value.items():
        if not is_valid_key(key):
            raise ConfigError(f"{where}: invalid name {key!r}; a series name is {KEY_RULE}")
        if key in counters:
            raise ConfigError(
                f"{where}.{key}: {key!r} is a counter (counters or defaultKey); a series never shares a name with "
                "a counter: name the series differently"
            )
        if isinstance(raw, SeriesConfig):  # the construct's prop, as the function's settings carry it
            raw = raw.to_json()
        try:
            series[key] = parse_series(key, raw, region_slots=parsed["region_slots"], where=f"{where}.{key}")
        except SeriesConfigError as err:
            raise ConfigError(str(err)) from None
    return series


def _reserved_concurrency(value: Any, parsed: Mapping[str, Any], where: str) -> int | None:
    return None if value is None else _whole_number(value, where, low=1, high=10000)


def _idempotency_expiry(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    return _whole_number(value, where, low=60, high=7 * 86400)


def _log_retention(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    if value not in LOG_RETENTION_DAYS or isinstance(value, bool):
        raise ConfigError(f"{where}: must be one of CloudWatch's retention periods {LOG_RETENTION_DAYS}, got {value!r}")
    return int(value)


def _cors_origins(value: Any, parsed: Mapping[str, Any], where: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(o, str) and o for o in value):
        raise ConfigError(f'{where}: must be a list of origins such as "https://app.example.com"')
    return tuple(value)


def _alarm_email(value: Any, parsed: Mapping[str, Any], where: str) -> str | None:
    if value is not None and (not isinstance(value, str) or "@" not in value):
        raise ConfigError(f"{where}: must be an e-mail address, got {value!r}")
    return value


def _callers(value: Any, parsed: Mapping[str, Any], where: str) -> tuple[str, ...]:
    return _parse_callers(list(value) if isinstance(value, tuple) else value, parsed["auth"], where)


def _access(value: Any, parsed: Mapping[str, Any], where: str) -> Rules | None:
    try:
        return parse_access(value, parsed["auth"], where)
    except AccessRuleError as err:
        raise ConfigError(str(err)) from None


def _compat(value: Any, parsed: Mapping[str, Any], where: str) -> str | None:
    return _compat_path(value, parsed["default_key"], parsed["counters"], where)


# In the README's order; a field's rule may read the fields it `needs`, which are parsed before it.
FIELDS: tuple[Field, ...] = (
    Field(
        "regions",
        "region_slot",
        "regions",
        None,
        "(required)",
        "region name → slot `0..regionSlots-1`; one stack per region, each slot used once. A removed region's "
        "slot is never given to another. Only regions with Lambda Function URLs and Powertools' public layer "
        "parameters (`SERVED_REGIONS` in `tickets_deploy/regions.py`); others are refused with the reason.",
        _regions,
        permanent=True,
        prop_doc="default `0`: the slot of the stack's region",
        needs=("region_slots",),
    ),
    Field(
        "regionSlots",
        "region_slots",
        "region_slots",
        1,
        "`1`",
        "how many slots there are (room to add regions later).",
        _region_slots,
        permanent=True,
        setting=True,
    ),
    Field(
        "tableName",
        "table_name",
        "table_name",
        DEFAULT_TABLE_NAME,
        f'`"{DEFAULT_TABLE_NAME}"`',
        "the counter table's name in every region (3–243 of `A-Z a-z 0-9 _ . -`); the ledger knows the service "
        "by it. A deployment from before this field: "
        "[Upgrading](docs/operations.md#upgrading-a-deployment-made-before-the-fixed-table-name).",
        _table_name,
        permanent=True,
    ),
    Field(
        "defaultKey",
        "default_key",
        "default_key",
        "default",
        '`"default"`',
        "the key of `GET /`.",
        _default_key,
        setting=True,
    ),
    Field(
        "auth",
        "auth",
        "auth",
        "AWS_IAM",
        '`"AWS_IAM"`',
        "Function URL auth: `AWS_IAM` (SigV4) or `NONE` (public).",
        _auth,
    ),
    Field(
        "strictKeys",
        "strict_keys",
        "strict_keys",
        False,
        "`false`",
        "`true`: only keys listed in `counters` (and `defaultKey`) are served; others are 404. While "
        "unconfigured keys are served, a counter added later keeps their layout "
        "([why](docs/operations.md#rollouts-are-not-atomic)).",
        _strict_keys,
        setting=True,
    ),
    Field(
        "counters",
        "counters",
        "counters",
        {},
        "`{}`",
        "key → its settings (the `counters.K` rows); keys not listed use the defaults.",
        _counters,
        setting=True,
        prop_doc="each counter's fields in snake_case",
        needs=("max_block",),
    ),
    Field(
        "series",
        "series",
        "series",
        {},
        "`{}`",
        "name → a journaled series (`start`, `period`, `periodStartMonth`, `utcOffset`, `format`, "
        "`formatMaxLength`, `max`): dense numbers, each with one journal entry, for invoices "
        "([docs/series.md](docs/series.md)). Never removed, never changed, never a counter's name; adds the "
        "series table `<tableName>-series`.",
        _series,
        permanent=True,
        setting=True,
        prop_doc="each series as cdk.json writes it, or a SeriesConfig",
        needs=("counters", "default_key", "region_slots"),
    ),
    Field(
        "reservedConcurrency",
        "reserved_concurrency",
        "reserved_concurrency",
        None,
        "none",
        "caps the function's concurrency (cost and abuse; set it with `auth: NONE`).",
        _reserved_concurrency,
    ),
    Field(
        "idempotencyExpirySeconds",
        "idempotency_expiry_seconds",
        "idempotency_expiry_seconds",
        3600,
        "`3600`",
        "how long an `Idempotency-Key` is remembered (60 s .. 7 days).",
        _idempotency_expiry,
        setting=True,
    ),
    Field(
        "logRetentionDays",
        "log_retention_days",
        "log_retention_days",
        30,
        "`30`",
        "the function's log retention (one of CloudWatch's periods).",
        _log_retention,
    ),
    Field(
        "corsOrigins",
        "cors_origins",
        "cors_origins",
        (),
        "`[]`",
        "origins allowed by the Function URL's CORS; none means no CORS at all.",
        _cors_origins,
    ),
    Field(
        "alarmEmail",
        "alarm_email",
        "alarm_email",
        None,
        "none",
        "an address subscribed to an (encrypted) SNS topic that every alarm notifies.",
        _alarm_email,
        owner="TicketAlarms",
    ),
    Field(
        "maxBlock",
        "max_block",
        "max_block",
        MAX_BLOCK,
        "`1000000`",
        "the most tickets one range block (`/_blocks/{key}`) may hold, 1..1,000,000.",
        _max_block,
        setting=True,
    ),
    Field(
        "callers",
        "callers",
        "callers",
        (),
        "`[]`",
        "other accounts (12-digit ids) or their role ARNs that may call the `AWS_IAM` URL: the stack grants both "
        "invoke actions to each ([docs/callers.md](docs/callers.md)).",
        _callers,
        needs=("auth",),
    ),
    Field(
        "compat",
        "compat",
        "compat_path",
        None,
        "off",
        '`{"path": "counter"}` also serves `GET {url}counter?systemKey=K` as the bare number, like the API Gateway '
        "counter; the path is literal and hides the key `counter` from `/counter` "
        "([moving from it](docs/migrating.md)).",
        _compat,
        setting=True,
        needs=("default_key", "counters"),
    ),
    Field(
        "access",
        "access",
        "access",
        None,
        "none: every invoker may do everything",
        "principal -> operation (`issue`, `series`, `void`, `read`) -> key patterns; what no rule allows is refused "
        "(403) ([docs/callers.md](docs/callers.md#access-rules)). Needs auth `AWS_IAM`; not permanent.",
        _access,
        needs=("auth",),
    ),
)


def _parse_fields(
    fields: Sequence[Field], value_of: Callable[[Field], Any], where_of: Callable[[Field], str], parsed: dict[str, Any]
) -> dict[str, Any]:
    """Each field's value (value_of) by its rule, a field after the ones it needs; `parsed` gathers them."""
    pending = list(fields)
    while pending:
        each = next(field for field in pending if all(need in parsed for need in field.needs))
        pending.remove(each)
        parsed[each.attribute] = each.parse(value_of(each), parsed, where_of(each))
    return parsed


def _counter_start(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    return exact_integer(value, low=0, high=MAX_TICKET, where=where)


def _counter_stride(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    return exact_integer(value, low=1, high=MAX_TICKET, where=where)


def _counter_max(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    maximum = exact_integer(value, low=0, high=MAX_TICKET, where=where)
    if maximum < parsed["start"]:
        raise ConfigError(f"{where}: must be >= start ({parsed['start']}), got {maximum}")
    return maximum


def _counter_shards(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    return _whole_number(value, where, low=1, high=MAX_SHARDS)


def _counter_max_block(value: Any, parsed: Mapping[str, Any], where: str) -> int | None:
    if value is None:  # the deployment's maxBlock
        return None
    max_block = _whole_number(value, where, low=1, high=MAX_BLOCK)
    if max_block > parsed["deployment_max_block"]:  # lowers tickets.maxBlock for this key, never raises it
        raise ConfigError(
            f"{where}: must be at most tickets.maxBlock ({parsed['deployment_max_block']}), got {max_block}"
        )
    return max_block


# One counter's fields (`counters.K.<name>`), in the order they are parsed.
COUNTER_FIELDS: tuple[Field, ...] = (
    Field(
        "start",
        "start",
        "start",
        1,
        "`1`",
        "the first ticket of key K (0 or more); keys not in `counters` use the defaults.",
        _counter_start,
        permanent=True,
    ),
    Field(
        "stride",
        "stride",
        "stride",
        1,
        "`1`",
        "the distance between consecutive tickets of one lane (1 or more).",
        _counter_stride,
        permanent=True,
    ),
    Field(
        "max",
        "max",
        "max",
        MAX_SAFE_INTEGER,
        "`2^53-1`",
        "the highest ticket ever issued (every ticket stays exact in every JSON parser); up to `2^63-1`; may change.",
        _counter_max,
        needs=("start",),
    ),
    Field(
        "shards",
        "shards",
        "shards",
        1,
        "`1`",
        "items the key's writes are spread over (1..100), for hot keys.",
        _counter_shards,
        permanent=True,
    ),
    Field(
        "maxBlock",
        "max_block",
        "max_block",
        None,
        "`maxBlock`",
        "the same as `maxBlock`, for key K; at most `maxBlock`.",
        _counter_max_block,
    ),
)


def readme_table() -> str:
    """The README's table of fields (tests/test_config.py holds README.md to it)."""
    rows = ["| field | prop | default | meaning |", "| --- | --- | --- | --- |"]
    for each in FIELDS:  # `counters` itself is the rows of its fields, counters.K.<name>
        if each.name != "counters":
            rows.append(each.readme_row())
            continue
        rows += [counter.readme_row("counters.K.", prop_prefix="counters[K].") for counter in COUNTER_FIELDS]
    return "\n".join(rows)


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
    """cdk.json's `tickets` object, checked field by field (FIELDS)."""
    if raw is None:
        raise ConfigError('tickets: missing; add a "tickets" object to the context in cdk.json')
    _require_object(raw, "tickets", {each.name for each in FIELDS})
    parsed = _parse_fields(
        FIELDS, lambda each: raw.get(each.name, each.default), lambda each: f"tickets.{each.name}", {}
    )
    return DeploymentConfig(**parsed)


def parse_props(props: Mapping[str, Any], region: str, label: str) -> DeploymentConfig:
    """The construct's keyword props (FIELDS' `prop` names; None: the field's default) for the stack's
    `region`, checked by the same rules as cdk.json; ConfigError messages start with `label` and name the prop."""

    def value_of(each: Field) -> Any:
        value = props.get(each.prop) if each.owner == "TicketService" else None
        if each.name == "regions":
            return {region: 0 if value is None else value}
        if each.name == "counters" and isinstance(value, Mapping):
            return {key: _counter_from_props(counter) for key, counter in value.items()}
        return each.default if value is None else value

    try:
        parsed = _parse_fields(FIELDS, value_of, lambda each: each.prop, {})
    except ConfigError as err:
        raise ConfigError(f"{label}: {err}") from None
    return DeploymentConfig(**parsed)


def _counter_from_props(counter: Any) -> Any:
    """A counter given as snake_case props (or a CounterConfig) in cdk.json's shape, for the same rules. A
    Python int is exact at any size (only cdk.json's numbers pass through Node), so a big one is passed on as
    the decimal string cdk.json would need."""
    if isinstance(counter, CounterConfig):
        counter = {each.prop: getattr(counter, each.attribute) for each in COUNTER_FIELDS}
    if not isinstance(counter, Mapping):
        return counter
    names = {each.prop: each.name for each in COUNTER_FIELDS}
    return {
        names.get(name, name): str(value) if _is_big_int(value) else value
        for name, value in counter.items()
        if value is not None
    }


def _is_big_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER


def to_raw(config: DeploymentConfig) -> dict[str, Any]:
    """`config` as cdk.json's `tickets` object (parse_config(to_raw(c)) == c): big numbers as decimal strings."""
    raw: dict[str, Any] = {}
    for each in FIELDS:
        value = getattr(config, each.attribute)
        if value is None:
            continue
        if each.name == "counters":
            value = {
                key: {
                    name: (str(number) if isinstance(number, int) and number > MAX_SAFE_INTEGER else number)
                    for name, number in counter.to_json().items()
                }
                for key, counter in value.items()
            }
        elif each.name == "compat":
            value = {"path": value}
        elif each.name == "access":
            value = value.to_json()
        elif each.name == "series":
            value = {key: series.to_json() for key, series in value.items()}
        elif isinstance(value, tuple):
            value = list(value)
        raw[each.name] = value
    return raw


def _parse_callers(raw: Any, auth: str, where: str = "tickets.callers") -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise ConfigError(
            f'{where}: must be a list of account ids and role ARNs, e.g. ["111122223333", '
            f'"arn:aws:iam::444455556666:role/orders"], got {raw!r}'
        )
    for index, caller in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(caller, str) or not (
            ACCOUNT_ID_PATTERN.fullmatch(caller) or ROLE_ARN_PATTERN.fullmatch(caller)
        ):
            raise ConfigError(
                f'{at}: must be a 12-digit account id such as "111122223333" or a role ARN such as '
                f'"arn:aws:iam::111122223333:role/NAME", got {caller!r}'
            )
        if caller in raw[:index]:
            raise ConfigError(f"{at}: {caller!r} is listed twice")
    if raw and auth != "AWS_IAM":
        raise ConfigError(f"{where}: needs auth AWS_IAM (it grants IAM permissions); with auth {auth} anyone may call")
    return tuple(raw)


def _compat_path(
    raw: Any, default_key: str, counters: Mapping[str, CounterConfig], where: str = "tickets.compat"
) -> str | None:
    """`compat: {"path": "counter"}` turns on the compatibility route GET /counter?systemKey=X (the
    bare number, as the API Gateway counter pattern answers); absent, /counter is the key `counter`.
    The path is one segment shaped like a key, so it can never be _counters, _blocks or another route
    of ours (those start with `_`), and it may not hide the path of a key the config names. It is
    served literally (tickets.routes). With strictKeys false it hides the unconfigured key of its name
    from /path, which stays reachable as /?key=path (docs/migrating.md)."""
    if raw is None:
        return None
    _require_object(raw, where, {"path"})
    path = raw.get("path")
    if not is_valid_key(path):
        raise ConfigError(
            f'{where}.path: must be one path segment of {KEY_RULE} (without slashes), e.g. "counter", got {path!r}'
        )
    if path == default_key or path in counters:
        raise ConfigError(
            f"{where}.path: {path!r} is a key this config names (defaultKey or counters); /{path} "
            "would stop reaching it: choose another path"
        )
    return str(path)


def _parse_counter(key: str, raw: Any, deployment_max_block: int, where: str) -> CounterConfig:
    if not is_valid_key(key):
        raise ConfigError(f"{where}: {key!r} is not a valid key ({KEY_RULE})")
    _require_object(raw, where, {each.name for each in COUNTER_FIELDS})
    parsed = _parse_fields(
        COUNTER_FIELDS,
        lambda each: raw.get(each.name, each.default),
        lambda each: f"{where}.{each.name}",
        {"deployment_max_block": deployment_max_block},
    )
    del parsed["deployment_max_block"]
    return CounterConfig(**parsed)


def _require_object(raw: Any, where: str, allowed: set[str]) -> None:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown field (known: {', '.join(sorted(allowed))})")


def _whole_number(value: Any, where: str, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where}: must be a whole number from {low} to {high}, got {value!r}")
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
