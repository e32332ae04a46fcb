"""A field's value as cdk.json writes it, as a prop, and parsed: the rules (rules.py) parse; these go the other ways."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from tickets.config_json import camel
from tickets.settings import MAX_SAFE_INTEGER


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


# A prop reader or writer (field.PropReader): (a prop's or parsed value; the stack's region) -> the other shape.


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
