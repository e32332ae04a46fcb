"""Python client for Tickets: `TicketsClient` (SigV4, retries, idempotency keys) and `TicketLease`
(block leasing with background prefetch). Standard library plus botocore, nothing else."""
