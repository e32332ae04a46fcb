"""One definition of each field of cdk.json's `tickets` object (FIELDS, and a counter's COUNTER_FIELDS):
its name in cdk.json, the construct's prop, the parsed attribute, whether the function's settings carry
it, its default, its rule and its README row. The parsers of cdk.json and of the construct's props, the
function's environment, `to_raw` and the README's table are derived from these entries.

Adding a field: an entry in FIELDS (its rule in tickets_deploy.rules), its attribute on DeploymentConfig
(tests/test_config.py holds the two together), and, with `setting=True`, on tickets.settings.Settings (whose
encoding is derived from its attributes). With `recorded=True` the ledger keeps its deployed value (left out
at its default) and tickets_admin --service reads it back: nothing in the ledger's code changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tickets.access import Rules
from tickets.keys import KEY_RULE, MAX_BLOCK, is_valid_key
from tickets.series.config import SeriesConfig
from tickets.settings import MAX_SAFE_INTEGER, CounterConfig

from .rules import (
    DEFAULT_TABLE_NAME,
    ConfigError,
    Parser,
    _access,
    _alarm_email,
    _auth,
    _callers,
    _compat,
    _cors_origins,
    _counter_max,
    _counter_max_block,
    _counter_shards,
    _counter_start,
    _counter_stride,
    _default_key,
    _idempotency_expiry,
    _log_retention,
    _max_block,
    _region_slots,
    _regions,
    _require_object,
    _reserved_concurrency,
    _series,
    _table_name,
    boolean,
)


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


@dataclass(frozen=True)
class Field:
    """One setting, defined once: cdk.json's `tickets` object (`name`), the construct's keyword prop
    (`prop`, on `owner`), the parsed DeploymentConfig (`attribute`), whether the function's settings
    carry it (`setting`), its default, its rule (`parse`) and the README's row (`default_doc`, `doc`,
    `permanent`, `fenced`)."""

    name: str
    prop: str
    attribute: str
    default: Any
    default_doc: str
    doc: str
    parse: Parser
    permanent: bool = False
    # Permanent in place, but may change above a fence (`python -m tickets_admin fence`): the README says so.
    fenced: bool = False
    setting: bool = False
    owner: str = "TicketService"
    prop_doc: str = ""  # how the prop differs from the cdk.json field, when it does
    needs: tuple[str, ...] = ()  # the attributes of the fields its rule reads, parsed before it
    # The same in every region of one service (one numbering): constructs sharing a table name must agree.
    one_numbering: bool = False
    # Not permanent, but the ledger records its deployed value (in the service's `deployed` object, left out
    # at its default), so that tickets_admin builds a service's config from the ledger alone
    # (tickets_deploy/ledger_config.py). Permanent fields are recorded anyway (their values are checked).
    recorded: bool = False


def _counters(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, CounterConfig]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be an object mapping keys to {{start, stride, max, shards, maxBlock}}")
    return {key: _parse_counter(key, counter, parsed["max_block"], f"{where}.{key}") for key, counter in value.items()}


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
        fenced=True,
        setting=True,
        one_numbering=True,
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
        one_numbering=True,
        recorded=True,
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
        boolean,
        setting=True,
        one_numbering=True,
        recorded=True,
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
        one_numbering=True,
        recorded=True,
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
        one_numbering=True,
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
        recorded=True,
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
        recorded=True,
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
        fenced=True,
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
        recorded=True,
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
        fenced=True,
    ),
    Field(
        "maxBlock",
        "max_block",
        "max_block",
        None,
        "`maxBlock`",
        "the same as `maxBlock`, for key K; at most `maxBlock`.",
        _counter_max_block,
        recorded=True,
    ),
)


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
