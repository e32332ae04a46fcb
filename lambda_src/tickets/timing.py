"""How long a request may wait on DynamoDB, so a slow table ends in a 503, never a Lambda timeout.

The handler's botocore config and the stack's function timeout both come from here.
"""

DYNAMODB_MAX_ATTEMPTS = 3  # botocore "standard" retries: the first call and two retries
DYNAMODB_CONNECT_TIMEOUT_SECONDS = 1
DYNAMODB_READ_TIMEOUT_SECONDS = 1
_STANDARD_MODE_BACKOFF_SECONDS = 1 + 2  # at most 2**attempt seconds (jittered) between attempts
WORST_CASE_CALL_SECONDS = (
    DYNAMODB_MAX_ATTEMPTS * (DYNAMODB_CONNECT_TIMEOUT_SECONDS + DYNAMODB_READ_TIMEOUT_SECONDS)
    + _STANDARD_MODE_BACKOFF_SECONDS
)
# Powertools' idempotency: the lock, then the answer saved (or the lock deleted, or the record read).
IDEMPOTENCY_CALLS_PER_REQUEST = 2
# The counter store's calls for one request, which store.py enforces (503 rather than one more call).
# The longest path no other request interferes with, on an endpoint that returns no item with a
# failed condition: a throttled shard (1); an exhausted one, read to learn why (2), then every lane
# surveyed (1); a hand-made item adopted: advance, read, layout, adopt, advance (5).
STORE_CALLS_PER_REQUEST = 9
DYNAMODB_CALLS_PER_REQUEST = IDEMPOTENCY_CALLS_PER_REQUEST + STORE_CALLS_PER_REQUEST

WORST_CASE_DYNAMODB_SECONDS = DYNAMODB_CALLS_PER_REQUEST * WORST_CASE_CALL_SECONDS
FUNCTION_TIMEOUT_SECONDS = WORST_CASE_DYNAMODB_SECONDS + 4  # + cold start and our own work
