"""A config dataclass as the JSON the deploy side writes, derived from its fields (camelCase, left out at its default
unless `always`, as deployed environments and ledgers have it); metadata may also give `name`, `encode`, `decode`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields
from typing import Any, Self, cast

ALWAYS: Mapping[str, Any] = {"always": True}  # the metadata of an attribute written even at its default


def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda lower: lower.group(1).upper(), name)


def json_name(declared: Field[Any]) -> str:
    return cast("str", declared.metadata.get("name") or camel(declared.name))


def default_of(declared: Field[Any]) -> Any:
    factory = declared.default_factory
    return declared.default if factory is MISSING else factory()


def written(value: Any, declared: Field[Any]) -> bool:
    if callable(always := declared.metadata.get("always", False)):
        always = always(value)
    default = default_of(declared)
    return always or default is MISSING or getattr(value, declared.name) != default


def encoded(value: Any) -> dict[str, Any]:
    return {
        json_name(each): each.metadata.get("encode", _plain)(getattr(value, each.name))
        for each in fields(value)
        if written(value, each)
    }


def decoded(cls: Any, raw: Mapping[str, Any]) -> dict[str, Any]:
    return {
        each.name: each.metadata.get("decode", lambda same: same)(raw[json_name(each)])
        for each in fields(cls)
        if json_name(each) in raw
    }


def each_of(cls: Any) -> Mapping[str, Any]:
    return {"decode": lambda raw: {key: cls.from_json(each) for key, each in raw.items()}}


class ConfigJson:
    def to_json(self) -> dict[str, Any]:
        return encoded(self)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Self:
        return cast(Self, cast(Any, cls)(**decoded(cls, raw)))


def _plain(value: Any) -> Any:
    if isinstance(value, ConfigJson):
        return value.to_json()
    if isinstance(value, Mapping):
        return {key: _plain(each) for key, each in value.items()}
    return value
