"""What the function knows of its deployment, read from its environment at run time.

The deploy side (tickets_deploy.environment.handler_environment) writes `Settings` as JSON into
SETTINGS_ENV; the handler reads it back. Nothing here parses cdk.json or knows about regions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .keys import MAX_BLOCK
from .series.config import SeriesConfig
from .workers.config import PoolConfig

if TYPE_CHECKING:  # imported where a counter is opaque: a function without one never compiles tickets.opaque
    from .opaque import OpaqueConfig

SETTINGS_ENV = "TICKETS_SETTINGS"
COUNTER_TABLE_ENV = "TICKETS_TABLE"
IDEMPOTENCY_TABLE_ENV = "TICKETS_IDEMPOTENCY_TABLE"
SERIES_TABLE_ENV = "TICKETS_SERIES_TABLE"  # set only when series are configured
WORKERS_TABLE_ENV = "TICKETS_WORKERS_TABLE"  # set only when worker pools are configured
# The SSM SecureString parameter holding the keys of opaque ids (tickets/opaque/secret.py): its name, never its
# value; set only when a counter is opaque.
OPAQUE_KEYS_ENV = "TICKETS_OPAQUE_KEYS_PARAMETER"
MAX_SAFE_INTEGER = 2**53 - 1  # exact in every JSON parser: a counter's default max


@dataclass(frozen=True)
class CounterConfig:
    start: int = 1
    stride: int = 1
    max: int = MAX_SAFE_INTEGER
    shards: int = 1
    max_block: int | None = None  # the most tickets one /_blocks request may take; None: the deployment's
    # After a layout change (docs/explanation/epochs-and-fences.md): the key's epoch, the fence the ledger
    # recorded for it, and `start` is the epoch's start (at or above the fence). 0 and None: never changed.
    epoch: int = 0
    fence: int | None = None
    opaque: OpaqueConfig | None = None  # its answers are ids (tickets.opaque); None: the tickets themselves

    def to_json(self) -> dict[str, Any]:
        """Derived like Settings': each attribute under its camelCase name, left out at its default unless every version
        wrote it (COUNTER_ALWAYS_WRITTEN), so maxBlock, epoch, fence and opaque appear only when set."""
        return _encoded(self, COUNTER_ALWAYS_WRITTEN, _COUNTER_CODECS)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CounterConfig:
        return cls(**_decoded(cls, raw, _COUNTER_CODECS))


def unserved(key: str, config_name: str) -> str:
    """Why Settings.counter has no config for `key`: strictKeys' one refusal (the function's 404, tickets_admin's)."""
    return f"strictKeys is on and {config_name} does not configure {key!r}"


@dataclass(frozen=True)
class Settings:
    """What one region's handler needs to know, carried in its environment."""

    region_slot: int = 0
    region_slots: int = 1
    default_key: str = "default"
    strict_keys: bool = False
    counters: Mapping[str, CounterConfig] = field(default_factory=dict)
    idempotency_expiry_seconds: int = 3600
    max_block: int = MAX_BLOCK
    compat_path: str | None = None  # the compatibility route's path segment; None: off
    series: Mapping[str, SeriesConfig] = field(default_factory=dict)  # config `series`, by key
    workers: Mapping[str, PoolConfig] = field(default_factory=dict)  # config `workers`, by pool

    def block_limit(self, counter: CounterConfig) -> int:
        """The most tickets one range block of this counter may hold."""
        return counter.max_block if counter.max_block is not None else self.max_block

    def counter(self, key: str) -> CounterConfig | None:
        """The key's config; None when strictKeys forbids a key nobody configured."""
        if key in self.counters:
            return self.counters[key]
        if self.strict_keys and key != self.default_key:
            return None
        return CounterConfig()

    def to_json(self) -> str:
        """Each attribute under its camelCase name (the codecs below for the nested ones)."""
        return json.dumps(_encoded(self, ALWAYS_WRITTEN, _CODECS), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(**_decoded(cls, json.loads(text), _CODECS))


# Written even at their defaults, as every version did: deployed functions' environments stay as they were.
ALWAYS_WRITTEN = frozenset(
    {
        "region_slot",
        "region_slots",
        "default_key",
        "strict_keys",
        "counters",
        "idempotency_expiry_seconds",
        "max_block",
        "compat_path",
    }
)
# A counter's fields every version wrote (maxBlock, and a changed layout's epoch and fence, only when set).
COUNTER_ALWAYS_WRITTEN = frozenset({"start", "stride", "max", "shards"})
_Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]
_PLAIN: _Codec = (lambda value: value, lambda raw: raw)


def _opaque_from_json(raw: Mapping[str, Any]) -> OpaqueConfig:
    from .opaque import OpaqueConfig

    return OpaqueConfig.from_json(raw)


_COUNTER_CODECS: dict[str, _Codec] = {"opaque": (lambda opaque: opaque.to_json(), _opaque_from_json)}
_CODECS: dict[str, _Codec] = {
    "counters": (
        lambda counters: {key: counter.to_json() for key, counter in counters.items()},
        lambda raw: {key: CounterConfig.from_json(counter) for key, counter in raw.items()},
    ),
    "series": (
        lambda series: {key: each.to_json() for key, each in series.items()},
        lambda raw: {key: SeriesConfig.from_json(each) for key, each in raw.items()},
    ),
    "workers": (
        lambda pools: {name: pool.to_json() for name, pool in pools.items()},
        lambda raw: {name: PoolConfig.from_json(pool) for name, pool in raw.items()},
    ),
}


def _camel(name: str) -> str:
    """A Settings attribute's name in the environment: region_slot -> regionSlot."""
    return re.sub(r"_([a-z])", lambda lower: lower.group(1).upper(), name)


def _encoded(value: Any, always_written: frozenset[str], codecs: Mapping[str, _Codec]) -> dict[str, Any]:
    """A dataclass's attributes under their camelCase names, through their codecs."""
    return {
        _camel(each.name): codecs.get(each.name, _PLAIN)[0](getattr(value, each.name))
        for each in fields(value)
        if each.name in always_written or getattr(value, each.name) != _default(each)
    }


def _decoded(cls: Any, raw: Mapping[str, Any], codecs: Mapping[str, _Codec]) -> dict[str, Any]:
    """The keyword arguments of `cls` that `raw` (written by _encoded) holds; the others keep their defaults."""
    return {
        each.name: codecs.get(each.name, _PLAIN)[1](raw[_camel(each.name)])
        for each in fields(cls)
        if _camel(each.name) in raw
    }


def _default(declared: Field[Any]) -> Any:
    if declared.default is MISSING:
        assert declared.default_factory is not MISSING  # every attribute of Settings has a default
        return declared.default_factory()
    return declared.default
