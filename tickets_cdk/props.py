"""The construct's typed props: cdk.json's `tickets` fields in snake_case (None: the default).
Generated from tickets_deploy.schema by `make generated`: change the schema (docs/reference/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from tickets.series.config import SeriesConfig
from tickets.settings import CounterConfig
from tickets.workers.config import PoolConfig
from tickets_deploy.field import Seconds


class TicketServiceProps(TypedDict, total=False):
    # default `0`: the slot of the stack's region
    region_slot: int | None
    region_slots: int | None
    table_name: str | None
    default_key: str | None
    auth: str | None
    strict_keys: bool | None
    # each counter's fields in snake_case
    counters: Mapping[str, Mapping[str, Any] | CounterConfig] | None
    # each series as cdk.json writes it, or a SeriesConfig
    series: Mapping[str, Mapping[str, Any] | SeriesConfig] | None
    # each pool as cdk.json writes it, or a PoolConfig
    workers: Mapping[str, Mapping[str, int] | PoolConfig] | None
    reserved_concurrency: int | None
    idempotency_expiry_seconds: int | None
    log_retention_days: int | None
    memory_size: int | None
    # a `Duration` of whole seconds, or seconds
    timeout: Seconds | int | None
    cors_origins: Sequence[str] | None
    max_block: int | None
    callers: Sequence[str] | None
    compat: Mapping[str, str] | None
    access: Mapping[str, Mapping[str, Sequence[str]]] | None
