"""A counter's fields (`counters.K.<name>`) and the `counters` rule, defaults from tickets.settings.CounterConfig."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tickets.config_json import camel, default_of
from tickets.keys import KEY_RULE, is_valid_key
from tickets.settings import CounterConfig

from .field import Field, parse_fields
from .opaque_rules import parse_opaque
from .rules import MAX_SHARDS, ConfigError, counter_max_block_rule, counter_max_rule, exact, require_object, whole
from .shapes import encode_number, snake

_COUNTER_DEFAULTS = {declared.name: default_of(declared) for declared in dataclasses.fields(CounterConfig)}


def _counter_field(name: str, doc: str, parse: Any, **entry: Any) -> Field:
    attribute = snake(name)
    return Field(name, attribute, attribute, _COUNTER_DEFAULTS[attribute], doc, parse, **entry)


COUNTER_FIELDS: tuple[Field, ...] = (
    _counter_field(
        "start",
        "the first ticket of key K (0 or more); keys not in `counters` use the defaults.",
        exact(0),
        permanent=True,
    ),
    _counter_field(
        "stride",
        "the spacing of key K's tickets (1 or more): each is ≡ `start` (mod `stride`).",
        exact(1),
        permanent=True,
        fenced=True,
    ),
    _counter_field(
        "max",
        "the highest ticket ever issued (every ticket stays exact in every JSON parser); up to `2^63-1`; may change.",
        counter_max_rule,
        default_doc="`2^53-1`",
        recorded=True,
    ),
    _counter_field(
        "shards",
        "items the key's writes are spread over (1..100), for hot keys.",
        whole(1, MAX_SHARDS),
        permanent=True,
        fenced=True,
    ),
    _counter_field(
        "maxBlock",
        "the same as `maxBlock`, for key K; at most `maxBlock`.",
        counter_max_block_rule,
        default_doc="`maxBlock`",
        recorded=True,
    ),
    _counter_field(
        "opaque",
        '`{"width": 10, "alphabet": "digits", "check": "luhn"}`: the key answers '
        "[opaque ids](../glossary.md#opaque-id). `alphabet` `digits` (width up to 15) or `base32`; `check` `luhn`; "
        "`keyVersions` (10); `keyVersion` (1), which only grows. `max` must be below "
        "R^(width less the check) / keyVersions, R = 10 or 32 ([order numbers](../how-to/opaque-order-numbers.md)).",
        parse_opaque,
        permanent=True,
        needs=("max",),
    ),
)


def parse_counters(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, CounterConfig]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}: must be an object mapping keys to {{start, stride, max, shards, maxBlock, opaque}}"
        )
    return {key: _parse_counter(key, counter, parsed["max_block"], f"{where}.{key}") for key, counter in value.items()}


def _parse_counter(key: str, raw: Any, deployment_max_block: int, where: str) -> CounterConfig:
    if not is_valid_key(key):
        raise ConfigError(f"{where}: {key!r} is not a valid key ({KEY_RULE})")
    require_object(raw, where, {each.name for each in COUNTER_FIELDS})
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
    fields = {camel(name): encode_number(value) for name, value in counter.items() if value is not None}
    if isinstance(fields.get("opaque"), Mapping):
        fields["opaque"] = {camel(name): value for name, value in fields["opaque"].items()}
    return fields
