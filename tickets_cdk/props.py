"""The construct's typed props that are fields of cdk.json's `tickets` object, one line each.

Each prop takes its field's value in snake_case (tickets_deploy.schema.FIELDS: the prop's name, default
and rule; the README's configuration table lists the defaults); an omitted prop, or None, is the field's
default. tests/test_cdk_lib.py holds these keys to the schema's props.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from tickets.series.config import SeriesConfig
from tickets.settings import CounterConfig


class TicketServiceProps(TypedDict, total=False):
    counters: Mapping[str, Mapping[str, Any] | CounterConfig] | None  # counters[K].start, .stride, .max, ...
    table_name: str | None
    region_slot: int | None  # the slot of the stack's region (default 0)
    region_slots: int | None
    strict_keys: bool | None
    auth: str | None
    default_key: str | None
    max_block: int | None
    idempotency_expiry_seconds: int | None
    log_retention_days: int | None
    cors_origins: Sequence[str] | None
    reserved_concurrency: int | None
    callers: Sequence[str] | None
    compat: Mapping[str, str] | None
    series: Mapping[str, Mapping[str, Any] | SeriesConfig] | None  # options snake_case (utc_offset) or camelCase
    access: Mapping[str, Mapping[str, Sequence[str]]] | None  # principal -> operation -> key patterns
