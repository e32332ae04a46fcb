"""Python client for Tickets: `TicketsClient` (SigV4, retries, idempotency keys, range blocks) and
`TicketLease` (adaptively sized range blocks with background prefetch). Standard library plus
botocore, nothing else.

    from tickets_client import TicketsClient, TicketLease, TicketsError, Block
"""

from .client import Block, SeriesNumber, TicketsClient
from .errors import TicketsError
from .lease import TicketLease
from .version import __version__

__all__ = ["Block", "SeriesNumber", "TicketLease", "TicketsClient", "TicketsError", "__version__"]
