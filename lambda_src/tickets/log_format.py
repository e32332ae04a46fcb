"""The per-issuance audit record (which tickets went to which request), as fields of the request's
one metrics line.

Every issuing request prints one JSON line already: Powertools Metrics' EMF line with
`TicketsIssued`, printed by `@metrics.log_metrics` when the invocation ends. The audit fields ride on
it as EMF metadata (`Metrics.add_metadata`, Powertools' supported way to put high-cardinality
fields in that line): CloudWatch turns the line's metrics into metrics and keeps every field as
JSON that Logs Insights reads, so one line per request carries both, and no logging machinery runs
on the warm path. docs/how-to/restore.md's Logs Insights queries read these fields (`AUDIT_FIELDS`).

The line is printed when the invocation ends, even when it fails (`log_metrics` flushes in a
`finally`), so it also tells an issuance whose answer was lost; an invocation killed in between
(its memory, or the function's timeout, which the request's deadline keeps it well inside) loses it.
"""

from __future__ import annotations

from typing import Any, Protocol

# What the line carries about an issuance, by name: the key, how many tickets, the first and last of
# them (a list's or a range block's), the Function URL request id the request's log lines carry, and how
# many more tickets the lane can issue before max (IssuedTickets.tickets_left).
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
