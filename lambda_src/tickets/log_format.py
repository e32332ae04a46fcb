"""The per-issuance audit record: EMF metadata on the request's one metrics line, printed even when the invocation
fails; docs/how-to/restore.md's Logs Insights queries read these fields."""

from __future__ import annotations

from typing import Any

AUDIT_FIELDS = ("key", "count", "first_ticket", "last_ticket", "correlation_id", "tickets_left")


def record_issuance(metrics: Any, **fields: Any) -> None:  # metrics: Powertools' Metrics
    for name in AUDIT_FIELDS:
        if (value := fields[name]) is not None:
            metrics.add_metadata(name, value)
