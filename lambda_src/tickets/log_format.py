"""The per-issuance audit record (which tickets went to which request): EMF metadata on the request's one metrics
line (Powertools' `add_metadata`), printed when the invocation ends, even when it fails; docs/how-to/restore.md's Logs
Insights queries read these fields (`AUDIT_FIELDS`)."""

from __future__ import annotations

from typing import Any, Protocol

# The key, how many tickets, the first and last, the request id its log lines carry, and the lane's tickets left.
AUDIT_FIELDS = ("key", "count", "first_ticket", "last_ticket", "correlation_id", "tickets_left")


class Metadata(Protocol):
    """What the audit needs of Powertools' Metrics."""

    def add_metadata(self, key: str, value: Any) -> None: ...


def record_issuance(metrics: Metadata, **fields: Any) -> None:
    """Put the issuance's audit fields (each of AUDIT_FIELDS, given by name) in the request's metrics line, in that
    order (None values are left out)."""
    for name in AUDIT_FIELDS:
        if (value := fields[name]) is not None:
            metrics.add_metadata(name, value)
