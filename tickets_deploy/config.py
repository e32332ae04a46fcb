"""cdk.json's `tickets` config: what an operator may write, read from cdk.json or from the construct's props.

`parse_config` validates what an operator wrote, field by field (tickets_deploy.schema.FIELDS);
`parse_props` the construct's keyword props by the same rules; `to_raw` writes a config back as cdk.json's
object; `load_config_file` reads cdk.json for the local server and tickets_admin. The schema, the rules,
the function's environment and the README's table live in their own modules, re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tickets.series.config import SERIES_OPTIONS
from tickets.settings import MAX_SAFE_INTEGER, CounterConfig

from .environment import (
    METRICS_NAMESPACE,
    POWERTOOLS_ENVIRONMENT,
    SERVICE_NAME,
    handler_environment,
    region_settings,
)
from .readme import readme_table
from .rules import (
    ACCOUNT_ID_PATTERN,
    AUTH_TYPES,
    DECIMAL_PATTERN,
    DEFAULT_TABLE_NAME,
    LOG_RETENTION_DAYS,
    MAX_SETTINGS_BYTES,
    MAX_SHARDS,
    MAX_TICKET,
    ROLE_ARN_PATTERN,
    TABLE_NAME_PATTERN,
    ConfigError,
    Parser,
    _require_object,
    exact_integer,
)
from .schema import COUNTER_FIELDS, FIELDS, DeploymentConfig, Field, _parse_fields

__all__ = [
    "ACCOUNT_ID_PATTERN",
    "AUTH_TYPES",
    "COUNTER_FIELDS",
    "DECIMAL_PATTERN",
    "DEFAULT_TABLE_NAME",
    "FIELDS",
    "LOG_RETENTION_DAYS",
    "MAX_SETTINGS_BYTES",
    "MAX_SHARDS",
    "MAX_TICKET",
    "METRICS_NAMESPACE",
    "POWERTOOLS_ENVIRONMENT",
    "ROLE_ARN_PATTERN",
    "SERVICE_NAME",
    "TABLE_NAME_PATTERN",
    "ConfigError",
    "DeploymentConfig",
    "Field",
    "Parser",
    "encode_field",
    "encode_number",
    "exact_integer",
    "handler_environment",
    "load_config_file",
    "parse_config",
    "parse_props",
    "pick_region",
    "readme_table",
    "region_settings",
    "to_raw",
]


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
        if each.name == "series" and isinstance(value, Mapping):
            return {key: _series_from_props(series) for key, series in value.items()}
        return each.default if value is None else value

    known = sorted(each.prop for each in FIELDS if each.owner == "TicketService")
    unknown = sorted(set(props) - set(known))
    if unknown:
        raise ConfigError(f"{label}: {unknown[0]}: not a prop of TicketService (its props: {', '.join(known)})")
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


def _series_from_props(series: Any) -> Any:
    """A series given with snake_case options (`utc_offset`, as every other prop is named) in cdk.json's
    shape; its camelCase names are accepted too."""
    if not isinstance(series, Mapping):
        return series
    names = {option.prop: option.name for option in SERIES_OPTIONS}
    return {names.get(name, name): value for name, value in series.items()}


def _is_big_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER


def to_raw(config: DeploymentConfig) -> dict[str, Any]:
    """`config` as cdk.json's `tickets` object (parse_config(to_raw(c)) == c): big numbers as decimal strings."""
    return {
        each.name: encode_field(each, getattr(config, each.attribute))
        for each in FIELDS
        if getattr(config, each.attribute) is not None
    }


def encode_field(each: Field, value: Any) -> Any:
    """One field's parsed value as cdk.json writes it (to_raw, and the ledger's `deployed` settings)."""
    if each.name == "counters":
        return {key: {name: encode_number(number) for name, number in c.to_json().items()} for key, c in value.items()}
    if each.name == "compat":
        return {"path": value}
    if each.name == "series":
        return {key: series.to_json() for key, series in value.items()}
    if each.name == "access":
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    return encode_number(value)


def encode_number(value: Any) -> Any:
    """Above 2^53-1, a whole number as the decimal string cdk.json (and every JSON parser) keeps exact."""
    return str(value) if _is_big_int(value) else value
