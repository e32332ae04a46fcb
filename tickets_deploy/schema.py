"""One definition of each field of cdk.json's `tickets` object (DeploymentConfig) and of a counter's (COUNTER_FIELDS,
defaults from tickets.settings.CounterConfig): everything else derives (adding a field: CONTRIBUTING.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tickets import timing
from tickets.access import Rules
from tickets.config_json import camel, default_of
from tickets.keys import KEY_RULE, MAX_BLOCK, is_valid_key
from tickets.series.config import SeriesConfig
from tickets.settings import CounterConfig
from tickets.workers.config import PoolConfig

from . import field, rules
from .field import Field, declare, entries_of, parse_fields

_COUNTER_DEFAULTS = {declared.name: default_of(declared) for declared in dataclasses.fields(CounterConfig)}


def _counter_field(name: str, doc: str, parse: Any, **entry: Any) -> Field:
    attribute = field.snake(name)
    return Field(name, attribute, attribute, _COUNTER_DEFAULTS[attribute], doc, parse, **entry)


COUNTER_FIELDS: tuple[Field, ...] = (
    _counter_field(
        "start",
        "the first ticket of key K (0 or more); keys not in `counters` use the defaults.",
        rules.exact(0),
        permanent=True,
    ),
    _counter_field(
        "stride",
        "the spacing of key K's tickets (1 or more): each is ≡ `start` (mod `stride`).",
        rules.exact(1),
        permanent=True,
        fenced=True,
    ),
    _counter_field(
        "max",
        "the highest ticket ever issued (every ticket stays exact in every JSON parser); up to `2^63-1`; may change.",
        rules.counter_max_rule,
        default_doc="`2^53-1`",
        recorded=True,
    ),
    _counter_field(
        "shards",
        "items the key's writes are spread over (1..100), for hot keys.",
        rules.whole(1, rules.MAX_SHARDS),
        permanent=True,
        fenced=True,
    ),
    _counter_field(
        "maxBlock",
        "the same as `maxBlock`, for key K; at most `maxBlock`.",
        rules.optional(rules.counter_max_block_rule),  # None: the deployment's
        default_doc="`maxBlock`",
        recorded=True,
    ),
    _counter_field(
        "opaque",
        '`{"width": 10, "alphabet": "digits", "check": "luhn"}`: the key answers '
        "[opaque ids](../glossary.md#opaque-id). `alphabet` `digits` (width up to 15) or `base32`; `check` `luhn`; "
        "`keyVersions` (10); `keyVersion` (1), which only grows. `max` must be below "
        "R^(width less the check) / keyVersions, R = 10 or 32 ([order numbers](../how-to/opaque-order-numbers.md)).",
        rules.optional(rules.parse_opaque),
        permanent=True,
        needs=("max",),
    ),
)


def parse_counters(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, CounterConfig]:
    if not isinstance(value, dict):
        raise rules.ConfigError(
            f"{where}: must be an object mapping keys to {{start, stride, max, shards, maxBlock, opaque}}"
        )
    return {key: _parse_counter(key, counter, parsed["max_block"], f"{where}.{key}") for key, counter in value.items()}


def _parse_counter(key: str, raw: Any, deployment_max_block: int, where: str) -> CounterConfig:
    if not is_valid_key(key):
        raise rules.ConfigError(f"{where}: {key!r} is not a valid key ({KEY_RULE})")
    rules.require_object(raw, where, {each.name for each in COUNTER_FIELDS})
    parsed = parse_fields(
        COUNTER_FIELDS,
        lambda each: raw.get(each.name, each.default),
        lambda each: f"{where}.{each.name}",
        {"deployment_max_block": deployment_max_block},
    )
    del parsed["deployment_max_block"]
    return CounterConfig(**parsed)


def counters_from_prop(counters: Any, region: str) -> Any:
    """Counters given as props (CounterConfig or snake_case fields) in cdk.json's shape, big ints as strings too."""
    if not isinstance(counters, Mapping):
        return counters
    return {key: _counter_from_prop(counter) for key, counter in counters.items()}


def _counter_from_prop(counter: Any) -> Any:
    if isinstance(counter, CounterConfig):  # an epoch and a fence come from the ledger
        counter = {each.name: getattr(counter, each.attribute) for each in COUNTER_FIELDS}
    if not isinstance(counter, Mapping):
        return counter
    fields = {camel(name): field.encode_number(value) for name, value in counter.items() if value is not None}
    if isinstance(fields.get("opaque"), Mapping):
        fields["opaque"] = {camel(name): value for name, value in fields["opaque"].items()}
    return fields


@dataclass(frozen=True)
class DeploymentConfig:
    """A parsed `tickets` config; each attribute is a field (a rule may read the fields it `needs`)."""

    regions: Mapping[str, int] = declare(
        prop="region_slot",
        prop_type="int",
        default_doc="(required)",
        doc="region name → slot `0..regionSlots-1`; one stack per region, each slot used once, never given to "
        "another region. Regions without Function URLs or Powertools' layer are refused (`tickets_deploy/regions.py`).",
        parse=rules.regions_rule,
        from_prop=lambda slot, region: {region: 0 if slot is None else slot},
        to_prop=lambda regions, region: regions[region],
        permanent=True,
        prop_doc="default `0`: the slot of the stack's region",
        needs=("region_slots",),
    )
    region_slots: int = declare(
        default=1,
        doc="how many slots there are (room to add regions later).",
        parse=rules.whole(1, 1000),
        permanent=True,
        fenced=True,
        setting=True,
        one_numbering=True,
    )
    table_name: str = declare(
        default="tickets-counters",
        doc="the counter table's name in every region (3–243 of `A-Z a-z 0-9 _ . -`); the ledger knows the service "
        "by it.",
        parse=rules.table_name_rule,
        permanent=True,
    )
    default_key: str = declare(
        default="default",
        doc="the key of `GET /`.",
        parse=rules.default_key_rule,
        setting=True,
        one_numbering=True,
        recorded=True,
    )
    auth: str = declare(
        default="AWS_IAM",
        doc="Function URL auth: `AWS_IAM` (SigV4) or `NONE` (public).",
        parse=rules.auth_rule,
    )
    strict_keys: bool = declare(
        default=False,
        doc="`true`: only keys listed in `counters` (and `defaultKey`) are served; others are 404 "
        "([why it matters](../how-to/add-a-counter.md)).",
        setting=True,
        one_numbering=True,
        recorded=True,
    )
    counters: Mapping[str, CounterConfig] = declare(
        default={},
        prop_type="Mapping[str, Mapping[str, Any] | CounterConfig]",
        doc="key → its settings (the `counters.K` rows); keys not listed use the defaults.",
        parse=parse_counters,
        from_prop=counters_from_prop,
        setting=True,
        prop_doc="each counter's fields in snake_case",
        needs=("max_block",),
        one_numbering=True,
        recorded=True,
    )
    series: Mapping[str, SeriesConfig] = declare(
        default={},
        prop_type="Mapping[str, Mapping[str, Any] | SeriesConfig]",
        doc="name → a journaled series ([its options](series.md)); adds the table `<tableName>-series`.",
        parse=rules.series_rule,
        from_prop=field.series_from_prop,
        permanent=True,
        setting=True,
        prop_doc="each series as cdk.json writes it, or a SeriesConfig",
        needs=("counters", "default_key", "region_slots"),
        one_numbering=True,
    )
    workers: Mapping[str, PoolConfig] = declare(
        default={},
        prop_type="Mapping[str, Mapping[str, int] | PoolConfig]",
        doc='pool name → `{"size": 1..65536, "ttlSeconds": 10..86400}`: worker ids `0..size-1` leased to one '
        "process at a time ([worker ids](../how-to/worker-ids.md)); adds the workers table `<tableName>-workers`.",
        parse=rules.workers_rule,
        setting=True,
        prop_doc="each pool as cdk.json writes it, or a PoolConfig",
    )
    reserved_concurrency: int | None = declare(
        default=None,
        doc="caps the function's concurrency (cost and abuse; set it with `auth: NONE`).",
        parse=rules.optional(rules.whole(1, 10000)),
    )
    idempotency_expiry_seconds: int = declare(
        default=3600,
        doc="how long an `Idempotency-Key` is remembered (60 s .. 7 days).",
        parse=rules.whole(60, 7 * 86400),
        setting=True,
    )
    log_retention_days: int = declare(
        default=365,
        doc="the function's log retention in days (one of CloudWatch's periods): the audit trail. Control Tower's "
        "CT.CLOUDWATCH.PR.2 asks for at least 365.",
        parse=rules.log_retention_rule,
    )
    memory_size: int = declare(
        default=256,
        doc="the function's memory in MB (128–10240; Lambda gives CPU in proportion).",
        parse=rules.whole(128, 10240),
    )
    timeout_seconds: int = declare(
        prop="timeout",
        default=timing.FUNCTION_TIMEOUT_SECONDS,
        prop_type="Seconds | int",
        doc=f"the function's timeout in seconds, {timing.MIN_FUNCTION_TIMEOUT_SECONDS}–"
        f"{timing.MAX_FUNCTION_TIMEOUT_SECONDS}; requests end at their deadline before it "
        "(`lambda_src/tickets/timing.py`).",
        parse=rules.function_timeout_rule,
        from_prop=field.seconds_from_prop,
        prop_doc="a `Duration` of whole seconds, or seconds",
    )
    cors_origins: tuple[str, ...] = declare(
        default=(),
        prop_type="Sequence[str]",
        doc="origins allowed by the Function URL's CORS; none means no CORS at all.",
        parse=rules.cors_origins_rule,
    )
    alarm_email: str | None = declare(
        default=None,
        doc="an address subscribed to an (encrypted) SNS topic that every alarm notifies.",
        parse=rules.alarm_email_rule,
        owner="TicketAlarms",
    )
    alarm_days_left: int = declare(
        default=30,
        doc="`CounterRunningOut` fires when a lane would reach `max` within this many days (1–3650) "
        "([monitoring](monitoring.md)).",
        parse=rules.whole(1, 3650),
        owner="TicketAlarms",
    )
    max_block: int = declare(
        default=MAX_BLOCK,
        doc="the most tickets one range block (`/_blocks/{key}`) may hold, 1..1,000,000.",
        parse=rules.whole(1, MAX_BLOCK),
        setting=True,
        recorded=True,
    )
    callers: tuple[str, ...] = declare(
        default=(),
        prop_type="Sequence[str]",
        doc="other accounts (12-digit ids) or their role ARNs that may call the `AWS_IAM` URL "
        "([callers](../how-to/call-from-another-account.md)).",
        parse=rules.callers_rule,
        needs=("auth",),
    )
    compat_path: str | None = declare(
        "compat",
        prop="compat",
        default=None,
        prop_type="Mapping[str, str]",
        default_doc="off",
        doc='`{"path": "counter"}` also serves `GET {url}counter?systemKey=K` as the bare number '
        "([the route](http-api.md#the-compatibility-route)).",
        parse=rules.optional(rules.compat_rule),
        encode=lambda path: {"path": path},
        to_prop=lambda path, region: None if path is None else {"path": path},
        setting=True,
        needs=("default_key", "counters"),
        recorded=True,
    )
    access: Rules | None = declare(
        "access",
        default=None,
        prop_type="Mapping[str, Mapping[str, Sequence[str]]]",
        default_doc="none: every invoker may do everything",
        doc="principal -> operation (`issue`, `series`, `void`, `read`, `workers`) -> key patterns; what no rule "
        "allows is 403 ([access rules](../how-to/access-rules.md)). Needs auth `AWS_IAM`.",
        parse=rules.optional(rules.access_rule),
        to_prop=lambda rules, region: field.encode_plain(rules),  # None stays None
        needs=("auth",),
    )


FIELDS: tuple[Field, ...] = entries_of(DeploymentConfig)
