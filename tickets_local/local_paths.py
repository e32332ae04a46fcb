"""The paths the local server answers itself, before the function. No key starts with `_`, so no counter can
shadow them, and the deployed function (which has no such routes) answers them 404. A module of constants only,
so the test kit (tickets_local.testing) reads them without importing the server and botocore with it."""

OPENAPI_PATH = "/_local/openapi.json"  # the API's OpenAPI document, for this server's config
COUNTERS_PATH = "/_local/counters"  # every counter item of the server's table
# Empties this server's tables and rebuilds its app (tickets_local.testing's reset()); answered only by a
# server started with allow_reset (`--allow-reset`): on a persistent endpoint it erases every counter.
RESET_PATH = "/_local/reset"
