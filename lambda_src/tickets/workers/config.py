"""A pool's config and the plain logic of its leases: which ids are free, a full pool's Retry-After."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..config_json import ConfigJson

MAX_POOL_SIZE = 65_536
MIN_TTL_SECONDS = 10
MAX_TTL_SECONDS = 86_400
MAX_OWNER_CHARS = 128
OWNER_PATTERN = re.compile(rf"[\x20-\x7e]{{1,{MAX_OWNER_CHARS}}}")
MAX_EPOCH = 2**53 - 1  # exact in every JSON parser


@dataclass(frozen=True)
class PoolConfig(ConfigJson):
    size: int
    ttl_seconds: int


def free_workers(items: Iterable[tuple[int, int]], low: int, high: int, now: int, live: list[int]) -> Iterator[int]:
    """The ids in [low, high) free at `now` (ms), in order; `live` gathers the others' expiries (for Retry-After)."""
    expected = low
    for worker, expires in items:
        yield from range(expected, worker)
        if expires <= now:
            yield worker
        else:
            live.append(expires)
        expected = worker + 1
    yield from range(expected, high)


def retry_after_seconds(live: list[int], now: int, ttl_seconds: int) -> int:
    """Whole seconds until the earliest expiry (at least 1); the ttl when none was read."""
    return max(1, math.ceil((min(live) - now) / 1000)) if live else ttl_seconds
