"""What the function knows of its deployment, read from its environment at run time.

The deploy side (tickets_deploy.config.handler_environment) writes `Settings` as JSON into
SETTINGS_ENV; the handler reads it back. Nothing here parses cdk.json or knows about regions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .keys import MAX_BLOCK
from .series.config import SeriesConfig

SETTINGS_ENV = "TICKETS_SETTINGS"
COUNTER_TABLE_ENV = "TICKETS_TABLE"
IDEMPOTENCY_TABLE_ENV = "TICKETS_IDEMPOTENCY_TABLE"
SERIES_TABLE_ENV = "TICKETS_SERIES_TABLE"  # set only when series are configured
MAX_SAFE_INTEGER = 2**53 - 1  # exact in every JSON parser: a counter's default max


@dataclass(frozen=True)
class CounterConfig:
    start: int = 1
    stride: int = 1
    max: int = MAX_SAFE_INTEGER
    shards: int = 1
    max_block: int | None = None  # the most tickets one /_blocks request may take; None: the deployment's
    # After a layout change (docs/design.md#epochs-and-fences): the key's epoch, the fence the ledger
    # recorded for it, and `start` is the epoch's start (at or above the fence). 0 and None: never changed.
    epoch: int = 0
    fence: int | None = None

    def to_json(self) -> dict[str, int]:
        encoded = {"start": self.start, "stride": self.stride, "max": self.max, "shards": self.shards}
        if self.max_block is not None:
            encoded["maxBlock"] = self.max_block
        if self.epoch:  # only after a layout change: every other counter's settings stay as they were
            encoded["epoch"] = self.epoch
        if self.fence is not None:
            encoded["fence"] = self.fence
        return encoded

    @classmethod
    def from_json(cls, raw: Mapping[str, int]) -> CounterConfig:
        return cls(
            start=raw["start"],
            stride=raw["stride"],
            max=raw["max"],
            shards=raw["shards"],
            max_block=raw.get("maxBlock"),
            epoch=raw.get("epoch", 0),
            fence=raw.get("fence"),
        )


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
        # `series` only when configured: the settings of a deployment without series stay as they were.
        series = {"series": {key: s.to_json() for key, s in self.series.items()}} if self.series else {}
        return json.dumps(
            {
                **series,
                "regionSlot": self.region_slot,
                "regionSlots": self.region_slots,
                "defaultKey": self.default_key,
                "strictKeys": self.strict_keys,
                "counters": {key: c.to_json() for key, c in self.counters.items()},
                "idempotencyExpirySeconds": self.idempotency_expiry_seconds,
                "maxBlock": self.max_block,
                "compatPath": self.compat_path,
            },
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Settings:
        raw = json.loads(text)
        return cls(
            region_slot=raw["regionSlot"],
            region_slots=raw["regionSlots"],
            default_key=raw["defaultKey"],
            strict_keys=raw["strictKeys"],
            counters={key: CounterConfig.from_json(c) for key, c in raw["counters"].items()},
            idempotency_expiry_seconds=raw["idempotencyExpirySeconds"],
            max_block=raw["maxBlock"],
            compat_path=raw["compatPath"],
            series={key: SeriesConfig.from_json(s) for key, s in raw.get("series", {}).items()},
        )
