"""Python client for Tickets (docs/reference/clients.md): standard library, and botocore to sign."""

from .client import Block, SeriesNumber, TicketsClient
from .errors import TicketsError
from .lease import TicketLease
from .version import __version__
from .workers import ClockRollback, LeaseLost, PoolFull, Snowflake, WorkerGrant, WorkerLease

__all__ = [
    "Block",
    "ClockRollback",
    "LeaseLost",
    "PoolFull",
    "SeriesNumber",
    "Snowflake",
    "TicketLease",
    "TicketsClient",
    "TicketsError",
    "WorkerGrant",
    "WorkerLease",
    "__version__",
]
