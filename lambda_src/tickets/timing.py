"""How long a request may wait on DynamoDB, so a slow table ends in a 503, never a Lambda timeout.

The handler's botocore config and the stack's function timeout both come from here.
"""

DYNAMODB_MAX_ATTEMPTS = 3  # botocore "standard" retries: the first call and two retries
DYNAMODB_CONNECT_TIMEOUT_SECONDS = 1
DYNAMODB_READ_TIMEOUT_SECONDS = 1
_STANDARD_MODE_BACKOFF_SECONDS = 1 + 2  # at most 2**attempt seconds (jittered) between attempts
# Idempotency lock + two lanes (a throttled shard gets one stand-in) + idempotency save.
DYNAMODB_CALLS_PER_REQUEST = 4

WORST_CASE_DYNAMODB_SECONDS = DYNAMODB_CALLS_PER_REQUEST * (
    DYNAMODB_MAX_ATTEMPTS * (DYNAMODB_CONNECT_TIMEOUT_SECONDS + DYNAMODB_READ_TIMEOUT_SECONDS)
    + _STANDARD_MODE_BACKOFF_SECONDS
)
FUNCTION_TIMEOUT_SECONDS = WORST_CASE_DYNAMODB_SECONDS + 4  # + cold start and our own work
