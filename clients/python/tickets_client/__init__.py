"""Python client for Tickets (docs/reference/clients.md): standard library, and botocore to sign."""

from .client import Block, SeriesNumber, TicketsClient, WorkerGrant
from .errors import ClockRollback, LeaseLost, PoolFull, TicketsError
from .lease import TicketLease
from .version import __version__
from .workers import Snowflake, WorkerLease

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
