"""The error the client raises for a refused or failed request, and its kinds a caller may wait on or handle."""

from __future__ import annotations


class TicketsError(Exception):
    """`status`: None when no answer came back; `code` and `message`: the server's, or the client's own."""

    def __init__(self, status: int | None, code: str, message: str, retry_after: float | None = None):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class PoolFull(TicketsError):
    """503 pool_full: every worker id of the pool is leased. `retry_after`: seconds until the earliest expiry."""


class LeaseLost(TicketsError):
    """The lease is gone: its renewal was refused (409 lease_lost) or its safe end passed without a renewal."""


class ClockRollback(TicketsError):
    """The wall clock went back further than the generator waits: it raises rather than repeat an id."""
