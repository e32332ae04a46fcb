"""A field's value in its three shapes: as cdk.json writes it (and the ledger's `deployed` settings record it), as
the construct takes it (a prop), and parsed. The rules (tickets_deploy.rules) turn the first two into the third;
the functions here go the other ways. A field whose shapes are all alike needs none of them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from tickets.settings import MAX_SAFE_INTEGER


def encode_number(value: Any) -> Any:
    """Above 2^53-1, a whole number as the decimal string cdk.json (and every JSON parser) keeps exact."""
    big = isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER
    return str(value) if big else value


def encode_plain(value: Any) -> Any:
    """A parsed value as JSON writes it: a config object by its to_json, a tuple as a list, a big number as its
    decimal string."""
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, Mapping):
        return {name: encode_plain(each) for name, each in value.items()}
    if isinstance(value, tuple | list):
        return [encode_plain(each) for each in value]
    return encode_number(value)


def encode_compat(path: str) -> dict[str, str]:
    return {"path": path}


# A prop reader: (the prop's value, None when not given; the stack's region) -> the value in cdk.json's shape
# (None: the field's default). A prop writer: (the parsed value; the region) -> the prop.


def same_prop(value: Any, region: str) -> Any:
    return value


def encoded_prop(value: Any, region: str) -> Any:
    return None if value is None else encode_plain(value)


def compat_to_prop(path: str | None, region: str) -> dict[str, str] | None:
    return None if path is None else encode_compat(path)


def regions_from_prop(slot: Any, region: str) -> dict[str, Any]:
    """`region_slot` (default 0): the slot of the stack's own region, the one region a construct serves."""
    return {region: 0 if slot is None else slot}


def regions_to_prop(regions: Mapping[str, int], region: str) -> int:
    return regions[region]


def camel(name: str) -> str:
    """A prop's snake_case name (`utc_offset`) as cdk.json's (`utcOffset`); a camelCase name stays as it is."""
    return re.sub(r"_([a-z])", lambda lower: lower.group(1).upper(), name)


def snake(name: str) -> str:
    """cdk.json's camelCase name (`utcOffset`) as a prop's or an attribute's (`utc_offset`)."""
    return re.sub(r"[A-Z]", lambda upper: "_" + upper.group(0).lower(), name)


def series_from_prop(series: Any, region: str) -> Any:
    """Series given with snake_case options (`utc_offset`) in cdk.json's shape; camelCase names are accepted too."""
    if not isinstance(series, Mapping):
        return series
    return {
        key: {camel(name): value for name, value in each.items()} if isinstance(each, Mapping) else each
        for key, each in series.items()
    }


class Seconds(Protocol):
    """A span of time as aws-cdk-lib's `Duration` is one, typed without importing aws_cdk (tickets_cdk/props.py
    stays importable without it)."""

    def to_seconds(self, *, integral: bool | None = None) -> float: ...


def seconds_from_prop(duration: Any, region: str) -> Any:
    """A `Duration` or whole seconds, as seconds (its rule refuses a fraction)."""
    to_seconds = getattr(duration, "to_seconds", None)
    return duration if to_seconds is None else to_seconds(integral=False)
