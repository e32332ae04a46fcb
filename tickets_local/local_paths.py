"""The paths the local server answers itself (no key starts with `_`; deployed, they are 404), in a module the test
kit imports without the server."""

OPENAPI_PATH = "/_local/openapi.json"  # the API's OpenAPI document, for this server's config
COUNTERS_PATH = "/_local/counters"  # every counter item of the server's table
RESET_PATH = "/_local/reset"
