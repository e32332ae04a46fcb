"""Python client for Tickets: `TicketsClient` (SigV4, retries, idempotency keys, range blocks, worker ids),
`TicketLease` (adaptively sized range blocks with background prefetch), `WorkerLease` (a worker id, renewed)
and `Snowflake` (ids on one). Standard library and botocore.

    from tickets_client import TicketsClient, TicketLease, TicketsError, Block, WorkerLease, Snowflake
"""

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
