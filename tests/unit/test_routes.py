"""The route table (lambda_src/tickets/routes.py): literal paths, the reserved `_` prefix, `Allow` and the 404 texts.
The table is data (handlers by name), so it is checked here, in the unit tier."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tickets.access import OPERATIONS
from tickets.routes import ROUTES, compat_route, not_found_message, route_of, served
from tickets.settings import Settings

COMPAT = served(Settings(compat_path="v1.counter"))
PACKAGE = Path(__file__).resolve().parents[2] / "lambda_src" / "tickets"


@pytest.mark.parametrize(
    "path, allow",
    [
        ("/", "GET, POST"),
        ("/orders", "GET, POST"),
        ("/_counters/orders", "GET"),
        ("/_blocks/orders", "GET, POST"),
        ("/_health", "GET"),
        ("/_workers/snowflake", "POST"),  # one route a method: the dispatch's Allow joins them (routes.allowed)
        ("/_workers/snowflake/17", "PUT"),
        ("/a/b", None),
        ("/_counters/a/b", None),
        ("/_x", None),  # the `_` prefix is the service's: never a key
        ("/_counters", None),
        ("/v1.counter", "GET, POST"),  # a key, without compat
    ],
)
def test_the_route_of_a_path_and_its_allow(path, allow):
    route = route_of(path, ROUTES)
    assert (", ".join(route.methods) if route else None) == allow


def test_a_literal_path_matches_only_itself():
    """The dispatch compiles a path into a regular expression: `v1.counter` must be escaped, or it would
    also match /v1-counter and take that key's requests."""
    assert route_of("/v1.counter", COMPAT).handler == "counters.compat_ticket"
    for other in ("/v1-counter", "/v1_counter", "/v1xcounter"):
        assert route_of(other, COMPAT).handler == "counters.next_ticket", other
    compat = compat_route("v1.counter")
    assert compat.arguments("/v1.counter") == {} and compat.arguments("/v1-counter") is None


def test_the_compat_route_only_when_configured():
    assert [route.handler for route in served(Settings())] == [route.handler for route in ROUTES]
    assert [route.path for route in COMPAT if route.handler == "counters.compat_ticket"] == ["/v1.counter"]


def test_the_dispatch_reads_path_parameters_as_the_resolver_did():
    """A parameter is one segment of the characters Powertools' resolver took (a `_` prefix included:
    the handler decides, but never in the first segment, the service's own), never `/`, `"` or a
    backslash; `$` lets one trailing newline through, as it did."""
    by_path = {route.path: route for route in ROUTES}
    assert by_path["/"].arguments("/") == {} and by_path["/"].arguments("/a") is None
    assert by_path["/{key}"].arguments("/orders") == {"key": "orders"}
    assert by_path["/{key}"].arguments("/_x") is None
    assert by_path["/{key}"].arguments("/a%2Fb:c@d") == {"key": "a%2Fb:c@d"}
    assert by_path["/{key}"].arguments("/a/b") is None
    assert by_path["/{key}"].arguments('/a"b') is None and by_path["/{key}"].arguments("/a\\b") is None
    assert by_path["/{key}"].arguments("/orders\n") == {"key": "orders"}
    assert by_path["/_series/{key}/journal"].arguments("/_series/inv/journal") == {"key": "inv"}
    assert by_path["/_series/{key}/journal"].arguments("/_series/inv/void") is None
    assert by_path["/_counters/{key}"].arguments("/_counters/_x") == {"key": "_x"}


def test_each_route_names_its_operation():
    """What Runtime.authorize decides by: the operation the dispatch gives each handler with the request (a route
    added later is held to OPERATIONS)."""
    operations = {route.path: route.operation for route in ROUTES}
    assert set(operations.values()) <= {*OPERATIONS, "none"}
    assert (
        operations.items()
        >= {
            "/": "issue",
            "/{key}": "issue",
            "/_blocks/{key}": "issue",
            "/_counters/{key}": "read",
            "/_health": "none",
            "/_series/{key}": "series",
            "/_series/{key}/void": "void",
            "/_series/{key}/journal": "read",
            "/_workers/{pool}": "workers",
            "/_workers/{pool}/{worker}": "workers",
        }.items()
    )
    workers = [route for route in ROUTES if route.path.startswith("/_workers")]
    assert all(
        route.parameters == (("key",) if "{key}" in route.path else ()) for route in ROUTES if route not in workers
    )
    assert [route.parameters for route in workers] == [("pool",), ("pool",), ("pool", "worker"), ("pool", "worker")]


def test_404_texts_come_from_the_table():
    assert not_found_message("/_counters", ROUTES) == "/_counters needs a key: GET /_counters/{key}"
    assert not_found_message("/_blocks", ROUTES) == "/_blocks needs a key: GET or POST /_blocks/{key}"
    assert not_found_message("/_series", ROUTES) == "/_series needs a key: POST /_series/{key}"
    assert not_found_message("/_workers", ROUTES) == "/_workers needs a key: POST /_workers/{pool}"
    listed = (
        "/, /{key}, /_blocks/{key}, /_counters/{key}, /_health, /_series/{key}, "
        "/_series/{key}/void, /_series/{key}/journal, /_workers/{pool}, /_workers/{pool}/{worker}"
    )
    known = tuple(route for route in COMPAT if route.path in listed.split(", ") or route.path == "/v1.counter")
    assert not_found_message("/a/b", known) == f"no such path; use {listed} or /v1.counter"
    paths = list(dict.fromkeys(route.path for route in COMPAT))  # every path, in the table's order (a new one too)
    assert not_found_message("/a/b", COMPAT) == f"no such path; use {', '.join(paths[:-1])} or /v1.counter"


def test_the_api_reference_lists_every_route():
    """A new route is documented where users look it up: a row of docs/reference/http-api.md's route table."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "http-api.md").read_text()
    table = page[page.index("## Routes") : page.index("## Requests")]
    for route in ROUTES:
        row = "".join(f"`{method}` or " for method in route.methods[:-1]) + f"`{route.methods[-1]} {route.path}"
        assert f"| {row}" in table, row


def _imported_at_module_level(module: str) -> set[str]:
    """Every module `module` of the Lambda package imports when it is imported (its own by full name)."""
    path = PACKAGE / (module.removeprefix("tickets.").replace(".", "/") + ".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            name = ".".join(part for part in (base, node.module or "") if part)
            ours = [f"{name}.{alias.name}" for alias in node.names if name == "tickets" or node.level]
            found |= {name, *(each for each in ours if _is_module(each))}
    return found


def _is_module(name: str) -> bool:
    relative = name.removeprefix("tickets.").replace(".", "/")
    return (PACKAGE / f"{relative}.py").exists() or (PACKAGE / relative / "__init__.py").exists()


@pytest.mark.parametrize("entry", ["tickets.routes", "tickets.dispatch", "tickets.messages", "tickets.wire"])
def test_importing_the_table_and_the_dispatch_needs_only_the_standard_library(entry):
    """The table is data and its dispatch plain Python: everything they import, followed through the package,
    is the standard library's or the package's own, so they (and the API document) are checked in this tier."""
    seen, pending, foreign = set(), [entry], set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        for imported in _imported_at_module_level(module):
            top = imported.split(".")[0]
            if top == "tickets" and _is_module(imported):
                pending.append(imported)
            elif top not in sys.stdlib_module_names and top != "tickets":
                foreign.add(f"{module} imports {imported}")
    assert not foreign, sorted(foreign)
