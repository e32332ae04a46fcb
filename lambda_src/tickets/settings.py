"""What the function knows of its deployment, read from its environment at run time.

The deploy side (tickets_deploy.environment.handler_environment) writes `Settings` as JSON into
SETTINGS_ENV; the handler reads it back. Nothing here parses cdk.json or knows about regions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config_json import ALWAYS, ConfigJson, decoded, each_of, encoded
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


def _opaque_from_json(raw: Mapping[str, Any]) -> OpaqueConfig:
    from .opaque import OpaqueConfig

    return OpaqueConfig.from_json(raw)


@dataclass(frozen=True)
class CounterConfig(ConfigJson):
    """Written as its JSON's (config_json.py): maxBlock, epoch, fence and opaque only when set."""

    start: int = field(default=1, metadata=ALWAYS)
    stride: int = field(default=1, metadata=ALWAYS)
    max: int = field(default=MAX_SAFE_INTEGER, metadata=ALWAYS)
    shards: int = field(default=1, metadata=ALWAYS)
    max_block: int | None = None  # the most tickets one /_blocks request may take; None: the deployment's
    # After a layout change (docs/explanation/epochs-and-fences.md): the key's epoch, the fence the ledger
    # recorded for it, and `start` is the epoch's start (at or above the fence). 0 and None: never changed.
    epoch: int = 0
    fence: int | None = None
    # its answers are ids (tickets.opaque); None: the tickets themselves
    opaque: OpaqueConfig | None = field(default=None, metadata={"decode": _opaque_from_json})


def unserved(key: str, config_name: str) -> str:
    """Why Settings.counter has no config for `key`: strictKeys' one refusal (the function's 404, tickets_admin's)."""
    return f"strictKeys is on and {config_name} does not configure {key!r}"


@dataclass(frozen=True)
class Settings:
    """What one region's handler needs to know, carried in its environment."""

    # Written even at their defaults (ALWAYS), as every version did: deployed functions' environments stay as they were.
    region_slot: int = field(default=0, metadata=ALWAYS)
    region_slots: int = field(default=1, metadata=ALWAYS)
    default_key: str = field(default="default", metadata=ALWAYS)
    strict_keys: bool = field(default=False, metadata=ALWAYS)
    counters: Mapping[str, CounterConfig] = field(default_factory=dict, metadata={**ALWAYS, **each_of(CounterConfig)})
    idempotency_expiry_seconds: int = field(default=3600, metadata=ALWAYS)
    max_block: int = field(default=MAX_BLOCK, metadata=ALWAYS)
    compat_path: str | None = field(default=None, metadata=ALWAYS)  # the compatibility route's path segment; None: off
    series: Mapping[str, SeriesConfig] = field(default_factory=dict, metadata=each_of(SeriesConfig))  # config `series`
    workers: Mapping[str, PoolConfig] = field(default_factory=dict, metadata=each_of(PoolConfig))  # config `workers`

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
        return json.dumps(encoded(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(**decoded(cls, json.loads(text)))
