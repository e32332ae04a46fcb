"""The one exception the client raises for a refused or failed request."""

from __future__ import annotations


class TicketsError(Exception):
    """`status`: None when no answer came back; `code` and `message`: the server's, or the client's own."""

    def __init__(self, status: int | None, code: str, message: str, retry_after: float | None = None):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
