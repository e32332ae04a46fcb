"""What the schema says of one field of cdk.json's `tickets` object (a `Field`), and how an entry is written: as
the attribute of the config class it parses into (`declare`), so that the attribute, its default and its entry
are one declaration, and the entries are read off the class (`entries_of`) in its order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .rules import Parser
from .shapes import encode_plain, same_prop

_ENTRY = "tickets_deploy.field"  # the metadata key of a declared attribute's entry
_REQUIRED: Any = object()  # declare(default=...) for an attribute with no default (cdk.json must give it)

# (the prop's value or None; the stack's region) -> the value in cdk.json's shape, None for the default
# (tickets_deploy.shapes)
PropReader = Callable[[Any, str], Any]


@dataclass(frozen=True)
class Field:
    """One setting, defined once: its name in cdk.json's `tickets` object (`name`), the construct's keyword prop
    (`prop`, on `owner`, typed `prop_type`: tickets_cdk/props.py is generated from it), the parsed attribute
    (`attribute`) and its `default`, its rule (`parse`), how its parsed value is written back (`encode`: to_raw
    and the ledger's `deployed` settings) and how a prop becomes cdk.json's shape (`from_prop`) and back
    (`to_prop`), whether the function's settings carry it (`setting`), and the README's row (`default_doc`,
    `doc`, `permanent`, `fenced`)."""

    name: str
    prop: str
    attribute: str
    default: Any
    default_doc: str
    doc: str
    parse: Parser
    prop_type: str = ""  # the typed prop's annotation, without `| None` (every prop may be None: its default)
    encode: Callable[[Any], Any] = encode_plain
    from_prop: PropReader = same_prop
    to_prop: PropReader = same_prop
    permanent: bool = False
    # Permanent in place, but may change above a fence (`.venv/bin/python -m tickets_admin fence`): the README says so.
    fenced: bool = False
    setting: bool = False
    owner: str = "TicketService"
    prop_doc: str = ""  # how the prop differs from the cdk.json field, when it does
    needs: tuple[str, ...] = ()  # the attributes of the fields its rule reads, parsed before it
    # The same in every region of one service (one numbering): constructs sharing a table name must agree.
    one_numbering: bool = False
    # Not permanent, but the ledger records its deployed value (in the service's `deployed` object, left out
    # at its default), so that tickets_admin builds a service's config from the ledger alone
    # (tickets_deploy/ledger/deployed.py). Permanent fields are recorded anyway (their values are checked).
    recorded: bool = False


def declare(name: str, *, default: Any = _REQUIRED, prop: str | None = None, **entry: Any) -> Any:
    """A config class's attribute that is a field: its dataclass default (a dict or list as a factory) and its
    entry (Field's arguments but `attribute` and `default`, which the attribute gives). `prop` defaults to the
    attribute's name: the construct's props are cdk.json's names in snake_case."""
    metadata = {_ENTRY: {"name": name, "prop": prop, **entry}}
    if default is _REQUIRED:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, dict | list):
        return dataclasses.field(default_factory=type(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def entries_of(config_class: type) -> tuple[Field, ...]:
    """The entries of `config_class`'s declared attributes, in its order. An attribute declared without a default
    (cdk.json must give it) has the entry's default None, which its rule refuses."""
    entries = []
    for declared in dataclasses.fields(config_class):
        if _ENTRY not in declared.metadata:
            continue
        entry = dict(declared.metadata[_ENTRY])
        entry["prop"] = entry["prop"] or declared.name
        entries.append(Field(attribute=declared.name, default=default_of(declared), **entry))
    return tuple(entries)


def default_of(declared: dataclasses.Field[Any]) -> Any:
    """A dataclass attribute's default (None when it has none)."""
    if declared.default_factory is not dataclasses.MISSING:
        return declared.default_factory()
    return None if declared.default is dataclasses.MISSING else declared.default


def parse_fields(
    fields: Sequence[Field], value_of: Callable[[Field], Any], where_of: Callable[[Field], str], parsed: dict[str, Any]
) -> dict[str, Any]:
    """Each field's value (value_of) by its rule, a field after the ones it needs; `parsed` gathers them."""
    pending = list(fields)
    while pending:
        each = next(field for field in pending if all(need in parsed for need in field.needs))
        pending.remove(each)
        parsed[each.attribute] = each.parse(value_of(each), parsed, where_of(each))
    return parsed
