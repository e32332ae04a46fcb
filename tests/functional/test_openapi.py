"""The OpenAPI document (tickets_local/openapi.py): valid, generated from the route table for each config
(openapi.json is the default config's), with exactly the handler's routes and error codes, served by the
local server for its config, and true of the running code by schemathesis (`st run`, every check) over real
HTTP, without and with the compatibility route."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from common import EXAMPLE_CONFIG
from local_support import TICKETS_CONFIG, call
from tickets import __version__, errors, routes
from tickets.settings import Settings
from tickets_local import openapi
from tickets_local.server import OPENAPI_PATH
from tickets_local.testing import LocalTickets

TESTS = Path(__file__).resolve().parents[1]  # the helper modules (schemathesis_hooks.py)
REPO = TESTS.parent
DOCUMENT = json.loads((REPO / "openapi.json").read_text())  # the default config's
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
# Schemathesis per operation: a few dozen examples (fewer while iterating: TICKETS_SCHEMATHESIS_EXAMPLES=5),
# every check, one worker and no randomness (the same requests in the same order on every run).
EXAMPLES_PER_OPERATION = int(os.environ.get("TICKETS_SCHEMATHESIS_EXAMPLES", "25"))
# A compatibility path with a regular expression's metacharacter: it must be served (and documented) literally.
COMPAT = {"path": "v1.counter"}
COMPAT_DOCUMENT = openapi.document(Settings(compat_path=COMPAT["path"]))
DOCUMENTS = {"default": (EXAMPLE_CONFIG, DOCUMENT), "compat": ({**EXAMPLE_CONFIG, "compat": COMPAT}, COMPAT_DOCUMENT)}


def lookup(reference: str, document: dict[str, Any] = DOCUMENT) -> dict[str, Any]:
    node: Any = document
    for part in reference.removeprefix("#/").split("/"):
        node = node[part]
    return node


def dereference(node: dict[str, Any], document: dict[str, Any] = DOCUMENT) -> dict[str, Any]:
    while "$ref" in node:
        node = lookup(node["$ref"], document)
    return node


def operations(document: dict[str, Any] = DOCUMENT) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def error_codes(response: dict[str, Any]) -> set[str]:
    """The `error` codes an error answer may carry; none for an answer that is not an error of ours."""
    schema = dereference(response).get("content", {}).get("application/json", {}).get("schema", {})
    codes = set()
    for branch in schema.get("anyOf", [schema]):  # anyOf: ours, or the Function URL's own (403)
        parts = branch.get("allOf", [])
        if {"$ref": "#/components/schemas/Error"} in parts:
            codes |= {code for part in parts for code in part.get("properties", {}).get("error", {}).get("enum", [])}
    return codes


@pytest.mark.parametrize("document", [DOCUMENT, COMPAT_DOCUMENT], ids=DOCUMENTS)
def test_the_documents_are_valid_openapi(document):
    validate(document)
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["version"] == __version__


def test_openapi_json_is_the_default_configs_document():
    """The repository's openapi.json is generated, never edited: `make generated` writes it (tools/generate.py)."""
    assert (REPO / "openapi.json").read_bytes() == openapi.render(Settings()), (
        "openapi.json is out of date: run `make generated` (tools/generate.py) and commit what it writes"
    )


def test_the_compat_route_is_documented_only_when_configured_at_its_literal_path():
    assert set(COMPAT_DOCUMENT["paths"]) - set(DOCUMENT["paths"]) == {"/v1.counter"}
    assert set(DOCUMENT["paths"]) <= set(COMPAT_DOCUMENT["paths"])
    assert {operation["operationId"] for _, _, operation in operations(COMPAT_DOCUMENT)} - {
        operation["operationId"] for _, _, operation in operations()
    } == {"compatTicket", "compatTicketPost"}
    assert "`compat`" in DOCUMENT["info"]["description"]  # how compat adds a route


@pytest.mark.parametrize("name", DOCUMENTS)
def test_paths_and_methods_are_the_handlers_routes(deploy, name):
    """Both ways, for the default and a compat config: the dispatch serves exactly the route table's
    routes; every documented path and method reaches a handler; any other method on it is 405 with the
    documented methods in Allow."""
    config, document = DOCUMENTS[name]
    region = deploy(config)
    served = routes.served(region.settings)
    assert region.handler.dispatcher.routes == served
    assert list(document["paths"]) == [route.path for route in served]
    for path, item in document["paths"].items():
        sample = path.replace("{key}", "orders")
        documented = {method.upper() for method in item if method in METHODS}
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            answer = region.call(sample, method, query={"key": "orders"} if "compat" in path else None)
            if method in documented and path.startswith("/_series/"):  # its handler's 404: no such series here
                assert "not a configured series" in answer.body["message"], (path, method, answer)
            elif method in documented:
                assert answer.status not in (404, 405), (path, method, answer)
            else:
                assert (answer.status, set(answer.headers["Allow"].split(", "))) == (405, documented), (path, method)
    allow = dereference(document["components"]["responses"]["MethodNotAllowed"], document)["headers"]["Allow"]
    assert set(dereference(allow, document)["schema"]["enum"]) == {route.allow for route in served}


def test_error_statuses_and_codes_are_errors_py():
    classes, seen = [errors.TicketsError], []
    while classes:
        cls = classes.pop()
        seen.append(cls)
        classes.extend(cls.__subclasses__())
    in_code = {(cls.status, cls.code) for cls in seen}
    documented = {
        (int(status), code)
        for _, _, operation in operations(COMPAT_DOCUMENT)
        for status, response in operation["responses"].items()
        for code in error_codes(response)
    }
    # 405 belongs to no documented operation: it answers the methods a path does not list.
    documented |= {(405, code) for code in error_codes(DOCUMENT["components"]["responses"]["MethodNotAllowed"])}
    assert documented == in_code


def test_every_answer_of_ours_says_no_store_and_503_says_when_to_retry():
    for path, method, operation in operations(COMPAT_DOCUMENT):
        for status, response in operation["responses"].items():
            headers = dereference(response).get("headers", {})
            ours = status == "200" or error_codes(response)
            assert not ours or "Cache-Control" in headers, (path, method, status)
            assert (status == "503") == ("Retry-After" in headers), (path, method, status)


@pytest.fixture(scope="module", params=list(DOCUMENTS))
def server(request, tickets_servers) -> LocalTickets:
    """The test kit's local server (a process of its own) on the tests' config, without and with the
    compatibility route."""
    config = TICKETS_CONFIG if request.param == "default" else {**TICKETS_CONFIG, "compat": COMPAT}
    running = tickets_servers(config)
    running.reset()
    return running


@pytest.mark.slow
def test_the_local_server_serves_the_document_of_its_config(server):
    reply = call(server.url, OPENAPI_PATH)
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    compat = "compat" in server.config
    assert json.loads(reply.body) == (COMPAT_DOCUMENT if compat else DOCUMENT)
    refused = call(server.url, OPENAPI_PATH, method="POST")
    assert (refused.status, refused.headers["allow"], refused.json()["error"]) == (405, "GET", "method_not_allowed")
    assert call(server.url, "/_local").status == 404  # the rest of /_local is the function's: a reserved path
    assert f"{server.url}{OPENAPI_PATH}" in server.banner  # what the command printed when it started


def test_the_document_needs_nothing_outside_the_packages(tmp_path):
    """An installed tickets_local (from a wheel) has no openapi.json beside it: copied alone with the Lambda
    package, away from the repository, it still builds the document, from its own package data."""
    site = tmp_path / "site"
    for package in (REPO / "lambda_src" / "tickets", REPO / "tickets_local"):
        shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import sys, tickets.settings as s, tickets_local.openapi as o; sys.stdout.buffer.write(o.render(s.Settings()))"
    )
    environment = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=True, cwd=tmp_path, env=environment
    )
    assert result.stdout == (REPO / "openapi.json").read_bytes()


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
    document = COMPAT_DOCUMENT if "compat" in server.config else DOCUMENT
    operations_tested = sum(1 for _ in operations(document))
    assert f"Tested: {operations_tested}" in result.stdout, result.stdout[-3000:]
