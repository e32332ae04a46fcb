"""One field of cdk.json's `tickets` object (a `Field`), declared as the attribute it parses into (`declare`), and its
value's shapes: as cdk.json writes it and as a prop (the rules, rules.py, parse; these go the other ways)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass
from typing import Any, Protocol

from tickets.config_json import camel, default_of
from tickets.settings import MAX_SAFE_INTEGER

from .rules import RULES_BY_TYPE, Parser

_ENTRY = "tickets_deploy.field"  # the metadata key of a declared attribute's entry
_REQUIRED: Any = object()  # declare(default=...) for an attribute cdk.json must give

# (the prop's value or None; the stack's region) -> the value in cdk.json's shape, None for the default
PropReader = Callable[[Any, str], Any]


def encode_number(value: Any) -> Any:
    """Above 2^53-1, a whole number as the decimal string JSON parsers keep exact."""
    big = isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER
    return str(value) if big else value


def encode_plain(value: Any) -> Any:
    """A parsed value as JSON writes it (a config object by its to_json)."""
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, Mapping):
        return {name: encode_plain(each) for name, each in value.items()}
    if isinstance(value, tuple | list):
        return [encode_plain(each) for each in value]
    return encode_number(value)


def same_prop(value: Any, region: str) -> Any:
    return value


def snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda upper: "_" + upper.group(0).lower(), name)


def series_from_prop(series: Any, region: str) -> Any:
    if not isinstance(series, Mapping):
        return series
    return {
        key: {camel(name): value for name, value in each.items()} if isinstance(each, Mapping) else each
        for key, each in series.items()
    }


class Seconds(Protocol):
    """aws-cdk-lib's `Duration`, typed without importing aws_cdk."""

    def to_seconds(self, *, integral: bool | None = None) -> float: ...


def seconds_from_prop(duration: Any, region: str) -> Any:
    to_seconds = getattr(duration, "to_seconds", None)
    return duration if to_seconds is None else to_seconds(integral=False)


@dataclass(frozen=True)
class Field:
    """One setting: its names, default, rule, shapes and its row in the configuration reference."""

    name: str
    prop: str
    attribute: str
    default: Any
    doc: str
    parse: Parser
    default_doc: str = ""  # the reference's default, when the default as JSON does not say it
    prop_type: str = ""  # without `| None` (every prop may be None: its default)
    encode: Callable[[Any], Any] = encode_plain
    from_prop: PropReader = same_prop
    to_prop: PropReader = same_prop
    permanent: bool = False
    fenced: bool = False  # permanent, but may change above a fence (tickets_admin fence)
    setting: bool = False  # tickets.settings.Settings carries it
    owner: str = "TicketService"
    prop_doc: str = ""  # how the prop differs from the cdk.json field, when it does
    needs: tuple[str, ...] = ()  # the attributes of the fields its rule reads, parsed before it
    one_numbering: bool = False  # the same in every region of one service
    recorded: bool = False  # the ledger records its deployed value, for tickets_admin --service

    @property
    def shown_default(self) -> str:
        if self.default_doc:
            return self.default_doc
        return "none" if self.default is None else f"`{json.dumps(self.encode(self.default))}`"


def declare(name: str | None = None, *, default: Any = _REQUIRED, prop: str | None = None, **entry: Any) -> Any:
    """An attribute that is a field (Field's arguments; by default its names, prop_type and parse are derived)."""
    metadata = {_ENTRY: {"name": name, "prop": prop, **entry}}
    if default is _REQUIRED:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, dict | list):
        return dataclasses.field(default_factory=type(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def entries_of(config_class: type) -> tuple[Field, ...]:
    entries = []
    for declared in dataclasses.fields(config_class):
        if _ENTRY in declared.metadata:
            entry, annotation = declared.metadata[_ENTRY], str(declared.type)
            entry = {
                "prop_type": annotation.removesuffix(" | None"),
                **entry,
                # KeyError: a field of another type than true/false or text declares its rule
                "parse": entry.get("parse") or RULES_BY_TYPE[annotation],
                "name": entry["name"] or camel(declared.name),
                "prop": entry["prop"] or declared.name,
            }
            default = default_of(declared)
            entries.append(Field(attribute=declared.name, default=None if default is MISSING else default, **entry))
    return tuple(entries)


def parse_fields(
    fields: Sequence[Field], value_of: Callable[[Field], Any], where_of: Callable[[Field], str], parsed: dict[str, Any]
) -> dict[str, Any]:
    """Each field's value (value_of) by its rule, a field after the ones it needs, into `parsed`."""
    pending = list(fields)
    while pending:
        each = next(field for field in pending if all(need in parsed for need in field.needs))
        pending.remove(each)
        parsed[each.attribute] = each.parse(value_of(each), parsed, where_of(each))
    return parsed
