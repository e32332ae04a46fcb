"""Python client for Tickets: `TicketsClient` (SigV4, retries, idempotency keys, range blocks) and
`TicketLease` (adaptively sized range blocks with background prefetch). Standard library plus
botocore, nothing else.

    from tickets_client import TicketsClient, TicketLease, TicketsError, Block
"""

from .client import Block, TicketsClient
from .errors import TicketsError
from .lease import TicketLease

__all__ = ["Block", "TicketLease", "TicketsClient", "TicketsError", "__version__"]

# The client's release, the server's (tickets.__version__; tests/test_client_packaging.py checks they
# agree): clients/python/pyproject.toml reads it from here.
__version__ = "0.2.0"
