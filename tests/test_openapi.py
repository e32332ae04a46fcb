"""openapi.json: a valid OpenAPI document, with exactly the handler's routes and error codes, served by the
local server, and true of the running code by schemathesis (`st run`, every check) over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from conftest import EXAMPLE_CONFIG
from local_support import TICKETS_CONFIG, call
from tickets import errors, protocol
from tickets_local.server import OPENAPI_DOCUMENT, OPENAPI_PATH
from tickets_local.testing import LocalTickets

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DOCUMENT = json.loads((REPO / "openapi.json").read_text())
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
# Schemathesis per operation: a few dozen examples, every check, one worker and no randomness (the same
# requests in the same order on every run).
EXAMPLES_PER_OPERATION = 25
# The document shows the compatibility route at the path of the config's example, `counter`.
COMPAT_PATH = "/counter"
COMPAT_CONFIG = {**EXAMPLE_CONFIG, "compat": {"path": COMPAT_PATH.lstrip("/")}}
SERVED_CONFIG = {**TICKETS_CONFIG, "compat": COMPAT_CONFIG["compat"]}


def lookup(reference: str) -> dict[str, Any]:
    node: Any = DOCUMENT
    for part in reference.removeprefix("#/").split("/"):
        node = node[part]
    return node


def dereference(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = lookup(node["$ref"])
    return node


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def error_codes(response: dict[str, Any]) -> set[str]:
    """The `error` codes an error answer may carry; none for an answer that is not an error of ours."""
    schema = dereference(response).get("content", {}).get("application/json", {}).get("schema", {})
    parts = schema.get("allOf", [])
    if {"$ref": "#/components/schemas/Error"} not in parts:
        return set()
    return {code for part in parts for code in part.get("properties", {}).get("error", {}).get("enum", [])}


def test_the_document_is_valid_openapi():
    validate(DOCUMENT)
    assert DOCUMENT["openapi"].startswith("3.1.")


def resolver_routes(region) -> set[tuple[str, str]]:
    resolver = region.handler.resolver
    return {(route.openapi_path, route.method.lower()) for route in resolver._static_routes + resolver._dynamic_routes}


def test_paths_and_methods_are_the_handlers_routes(deploy):
    """Both ways: every route the resolver registered is documented, and nothing else is; the
    compatibility route (documented at its example path) only when the config turns it on."""
    documented = {(path, method) for path, method, _ in operations()}
    assert documented == resolver_routes(deploy(COMPAT_CONFIG))
    assert documented - {(COMPAT_PATH, "get"), (COMPAT_PATH, "post")} == resolver_routes(deploy(EXAMPLE_CONFIG))


def test_paths_take_the_methods_the_router_tells_apart_from_404():
    """protocol.ROUTE_SHAPES decides 404 against 405 (and the Allow header): it must agree with the paths."""
    for path, item in DOCUMENT["paths"].items():
        sample = path.replace("{key}", "orders")
        allowed = protocol.allowed_methods(sample)
        assert allowed is not None, path
        assert set(allowed.split(", ")) == {method.upper() for method in item if method in METHODS}, path
    allow = dereference(DOCUMENT["components"]["responses"]["MethodNotAllowed"])["headers"]["Allow"]
    assert set(dereference(allow)["schema"]["enum"]) == {methods for _, methods in protocol.ROUTE_SHAPES}


def test_error_statuses_and_codes_are_errors_py():
    classes, seen = [errors.TicketsError], []
    while classes:
        cls = classes.pop()
        seen.append(cls)
        classes.extend(cls.__subclasses__())
    in_code = {(cls.status, cls.code) for cls in seen}
    documented = {
        (int(status), code)
        for _, _, operation in operations()
        for status, response in operation["responses"].items()
        for code in error_codes(response)
    }
    # 405 belongs to no documented operation: it answers the methods a path does not list.
    documented |= {(405, code) for code in error_codes(DOCUMENT["components"]["responses"]["MethodNotAllowed"])}
    assert documented == in_code


def test_every_answer_of_ours_says_no_store_and_503_says_when_to_retry():
    for path, method, operation in operations():
        for status, response in operation["responses"].items():
            headers = dereference(response).get("headers", {})
            ours = status == "200" or error_codes(response)
            assert not ours or "Cache-Control" in headers, (path, method, status)
            assert (status == "503") == ("Retry-After" in headers), (path, method, status)


@pytest.fixture(scope="module")
def server(tickets_servers) -> LocalTickets:
    running = tickets_servers(SERVED_CONFIG)
    running.reset()
    return running


@pytest.mark.slow
def test_the_local_server_serves_the_document(server):
    reply = call(server.url, OPENAPI_PATH)
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.body == OPENAPI_DOCUMENT.read_bytes()
    refused = call(server.url, OPENAPI_PATH, method="POST")
    assert (refused.status, refused.headers["allow"], refused.json()["error"]) == (405, "GET", "method_not_allowed")
    assert call(server.url, "/_local").status == 400  # the rest of /_local is the handler's: not a key
    assert f"{server.url}{OPENAPI_PATH}" in server.banner  # what the command printed when it started


def test_help_names_the_document_path():
    result = subprocess.run(
        [sys.executable, "-m", "tickets_local", "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    assert OPENAPI_PATH in result.stdout


@pytest.mark.slow
def test_schemathesis_finds_no_difference_between_the_document_and_the_code(server, tmp_path):
    """Every check schemathesis has (status codes, content types, headers, response schemas, valid requests
    accepted, invalid ones refused, undocumented methods 405 with Allow, ...) over real HTTP. The
    request rules that JSON Schema cannot state are kept by tests/schemathesis_hooks.py."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{server.url}{OPENAPI_PATH}",
        "--url",
        server.url,
        "--checks",
        "all",
        "--max-examples",
        str(EXAMPLES_PER_OPERATION),
        "--generation-deterministic",
        "--workers",
        "1",
        "--request-timeout",
        "10",
        "--no-color",
    ]
    environment = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        command, check=False, capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "No issues found" in result.stdout, result.stdout[-3000:]
    operations_tested = sum(1 for _ in operations())
    assert f"Tested: {operations_tested}" in result.stdout, result.stdout[-3000:]
