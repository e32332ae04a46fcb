"""What the function knows of its deployment: `Settings`, written as JSON into SETTINGS_ENV by
tickets_deploy.environment and read back by the handler."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config_json import ALWAYS, ConfigJson, decoded, each_of, encoded
from .keys import MAX_BLOCK
from .series.config import SeriesConfig
from .workers.config import PoolConfig

if TYPE_CHECKING:  # a function without an opaque counter never imports tickets.opaque
    from .opaque import OpaqueConfig

SETTINGS_ENV = "TICKETS_SETTINGS"
COUNTER_TABLE_ENV = "TICKETS_TABLE"
IDEMPOTENCY_TABLE_ENV = "TICKETS_IDEMPOTENCY_TABLE"
SERIES_TABLE_ENV = "TICKETS_SERIES_TABLE"  # only with series
WORKERS_TABLE_ENV = "TICKETS_WORKERS_TABLE"  # only with worker pools
OPAQUE_KEYS_ENV = "TICKETS_OPAQUE_KEYS_PARAMETER"  # the keys' SSM parameter's name, only with an opaque counter
MAX_SAFE_INTEGER = 2**53 - 1  # exact in every JSON parser: a counter's default max


def _opaque_from_json(raw: Mapping[str, Any]) -> OpaqueConfig:
    from .opaque import OpaqueConfig

    return OpaqueConfig.from_json(raw)


@dataclass(frozen=True)
class CounterConfig(ConfigJson):
    start: int = field(default=1, metadata=ALWAYS)
    stride: int = field(default=1, metadata=ALWAYS)
    max: int = field(default=MAX_SAFE_INTEGER, metadata=ALWAYS)
    shards: int = field(default=1, metadata=ALWAYS)
    max_block: int | None = None  # the most tickets one /_blocks request may take; None: the deployment's
    # After a layout change (docs/explanation/epochs-and-fences.md), and `start` is the epoch's.
    epoch: int = 0
    fence: int | None = None
    opaque: OpaqueConfig | None = field(default=None, metadata={"decode": _opaque_from_json})


def unserved(key: str, config_name: str) -> str:
    """strictKeys' one refusal (the function's 404, tickets_admin's)."""
    return f"strictKeys is on and {config_name} does not configure {key!r}"


@dataclass(frozen=True)
class Settings:
    # Written even at their defaults (ALWAYS), as every version did: deployed environments stay as they were.
    region_slot: int = field(default=0, metadata=ALWAYS)
    region_slots: int = field(default=1, metadata=ALWAYS)
    default_key: str = field(default="default", metadata=ALWAYS)
    strict_keys: bool = field(default=False, metadata=ALWAYS)
    counters: Mapping[str, CounterConfig] = field(default_factory=dict, metadata={**ALWAYS, **each_of(CounterConfig)})
    idempotency_expiry_seconds: int = field(default=3600, metadata=ALWAYS)
    max_block: int = field(default=MAX_BLOCK, metadata=ALWAYS)
    compat_path: str | None = field(default=None, metadata=ALWAYS)  # the compatibility route's path segment
    series: Mapping[str, SeriesConfig] = field(default_factory=dict, metadata=each_of(SeriesConfig))
    workers: Mapping[str, PoolConfig] = field(default_factory=dict, metadata=each_of(PoolConfig))

    def block_limit(self, counter: CounterConfig) -> int:
        return counter.max_block if counter.max_block is not None else self.max_block

    def counter(self, key: str) -> CounterConfig | None:
        if key in self.counters:
            return self.counters[key]
        if self.strict_keys and key != self.default_key:
            return None
        return CounterConfig()

    def to_json(self) -> str:
        return json.dumps(encoded(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(**decoded(cls, json.loads(text)))
