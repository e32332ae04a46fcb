"""The route table (lambda_src/tickets/routes.py): literal paths, the reserved `_` prefix, `Allow` and the 404 texts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tickets.routes import ROUTES, compat_route, not_found_message, route_of, served
from tickets.settings import Settings

COMPAT = served(Settings(compat_path="v1.counter"))


@pytest.mark.parametrize(
    "path, allow",
    [
        ("/", "GET, POST"),
        ("/orders", "GET, POST"),
        ("/_counters/orders", "GET"),
        ("/_blocks/orders", "GET, POST"),
        ("/_health", "GET"),
        ("/a/b", None),
        ("/_counters/a/b", None),
        ("/_x", None),  # the `_` prefix is the service's: never a key
        ("/_counters", None),
        ("/v1.counter", "GET, POST"),  # a key, without compat
    ],
)
def test_the_route_of_a_path_and_its_allow(path, allow):
    route = route_of(path, ROUTES)
    assert (route.allow if route else None) == allow


def test_a_literal_path_matches_only_itself():
    """Powertools compiles a rule into a regular expression: `v1.counter` must be escaped, or it would
    also match /v1-counter and take that key's requests."""
    assert route_of("/v1.counter", COMPAT).handler == "compat_ticket"
    for other in ("/v1-counter", "/v1_counter", "/v1xcounter"):
        assert route_of(other, COMPAT).handler == "next_ticket", other
    rule = compat_route("v1.counter").rule
    assert re.fullmatch(rule, "/v1.counter") and not re.fullmatch(rule, "/v1-counter")


def test_the_compat_route_only_when_configured():
    assert [route.handler for route in served(Settings())] == [route.handler for route in ROUTES]
    assert [route.path for route in COMPAT if route.handler == "compat_ticket"] == ["/v1.counter"]


def test_rules_are_powertools_rules():
    assert {route.path: route.rule for route in ROUTES} == {
        "/": "/",
        "/{key}": "/<key>",
        "/_blocks/{key}": "/_blocks/<key>",
        "/_counters/{key}": "/_counters/<key>",
        "/_health": "/_health",
        "/_series/{key}": "/_series/<key>",
        "/_series/{key}/void": "/_series/<key>/void",
        "/_series/{key}/journal": "/_series/<key>/journal",
    }
    assert all(route.parameters == (("key",) if "{key}" in route.path else ()) for route in ROUTES)


def test_404_texts_come_from_the_table():
    assert not_found_message("/_counters", ROUTES) == "/_counters needs a key: GET /_counters/{key}"
    assert not_found_message("/_blocks", ROUTES) == "/_blocks needs a key: GET or POST /_blocks/{key}"
    assert not_found_message("/_series", ROUTES) == "/_series needs a key: POST /_series/{key}"
    assert not_found_message("/a/b", COMPAT) == (
        "no such path; use /, /{key}, /_blocks/{key}, /_counters/{key}, /_health, /_series/{key}, "
        "/_series/{key}/void, /_series/{key}/journal or /v1.counter"
    )


def test_the_readmes_api_table_lists_every_route():
    """A new route is documented where users look first: a row of the README's API table."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("## HTTP API") : readme.index("| limit | value |")]
    for route in ROUTES:
        row = "".join(f"`{method}` or " for method in route.methods[:-1]) + f"`{route.methods[-1]} {route.path}"
        assert f"| {row}" in table, row
