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


def record_issuance(
    metrics: Metadata,
    *,
    key: str,
    count: int,
    first_ticket: int,
    last_ticket: int,
    correlation_id: str | None,
    tickets_left: int,
) -> None:
    """Put the issuance's audit fields in the request's metrics line (None values are left out)."""
    values = (key, count, first_ticket, last_ticket, correlation_id, tickets_left)
    for name, value in zip(AUDIT_FIELDS, values, strict=True):
        if value is not None:
            metrics.add_metadata(name, value)
