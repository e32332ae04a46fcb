"""Python client for Tickets: `TicketsClient` (SigV4, retries, idempotency keys, range blocks) and
`TicketLease` (adaptively sized range blocks with background prefetch). Standard library plus
botocore, nothing else."""
