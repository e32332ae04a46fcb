"""The OpenAPI document (tickets_local/openapi.py) against the running code: exactly the handler's routes and
methods, served by the local server for its config (without and with the compatibility route), and true of the
running code by schemathesis (`st run`, every check) over real HTTP, with the compatibility route (whose document
holds every operation of the default one) and on a config with shards, series, access rules and a fenced key.
The document's own checks (valid, current, derived): tests/unit/test_api_document.py; the handler's answers against
it: test_openapi_answers.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from openapi_support import DOCUMENT, METHODS, dereference, operations

from common import EXAMPLE_CONFIG
from local_support import TICKETS_CONFIG, call
from tickets import routes
from tickets.settings import Settings
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import layout_changes, record_epochs, record_services, write_ledger_file
from tickets_local import openapi
from tickets_local.events import PLAY_CALLER_HEADER
from tickets_local.testing import OPENAPI_PATH, LocalTickets

TESTS = Path(__file__).resolve().parents[1]  # the helper modules (schemathesis_hooks.py)
REPO = TESTS.parent
# Schemathesis per operation: ten examples in `make test`, on each of two configs (more with a larger
# TICKETS_SCHEMATHESIS_EXAMPLES, fewer while iterating: 5), every check, one worker and no randomness (the
# same requests in the same order on every run).
EXAMPLES_PER_OPERATION = int(os.environ.get("TICKETS_SCHEMATHESIS_EXAMPLES", "10"))
# A compatibility path with a regular expression's metacharacter: it must be served (and documented) literally.
COMPAT = {"path": "v1.counter"}
COMPAT_DOCUMENT = openapi.document(Settings(compat_path=COMPAT["path"]))
DOCUMENTS = {"default": (EXAMPLE_CONFIG, DOCUMENT), "compat": ({**EXAMPLE_CONFIG, "compat": COMPAT}, COMPAT_DOCUMENT)}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_paths_and_methods_are_the_handlers_routes(deploy, name):
    """Both ways, for the default and a compat config: the dispatch serves exactly the route table's
    routes; every documented path and method reaches a handler; any other method on it is 405 with the
    documented methods in Allow."""
    config, document = DOCUMENTS[name]
    region = deploy(config)
    served = routes.served(region.settings)
    assert region.handler.dispatcher.routes == served
    assert list(document["paths"]) == list(dict.fromkeys(route.path for route in served))
    for path, item in document["paths"].items():
        sample = path.replace("{key}", "orders").replace("{pool}", "snowflake").replace("{worker}", "0")
        documented = {method.upper() for method in item if method in METHODS}
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            answer = region.call(sample, method, query={"key": "orders"} if "compat" in path else None)
            if method in documented and path.startswith(("/_series/", "/_workers/")):  # its handler's 404: none here
                assert "not a configured" in answer.body["message"], (path, method, answer)
            elif method in documented:
                assert answer.status not in (404, 405), (path, method, answer)
            else:
                assert (answer.status, set(answer.headers["Allow"].split(", "))) == (405, documented), (path, method)
    allow = dereference(document["components"]["responses"]["MethodNotAllowed"], document)["headers"]["Allow"]
    assert set(dereference(allow, document)["schema"]["enum"]) == {routes.allowed(route, served) for route in served}


WORKERS = {"workers": {"snowflake": {"size": 65536, "ttlSeconds": 60}}}  # schemathesis_hooks.POOL: any id in range
PLAYED = "arn:aws:iam::111122223333:role/checkout"  # the caller every request of schemathesis's signs as
# The tests' config with shards, series, access rules and a key moved to another layout above a fence (its
# epoch recorded in the ledger beside cdk.json, as `python -m tickets_admin fence` records it): the answers
# these add (lanes of every shard, an epoch and a fence in a counter's state, 403s) are schemathesis's too.
LAYOUTS = {
    **TICKETS_CONFIG,
    **WORKERS,
    "defaultKey": "orders",
    "counters": {**TICKETS_CONFIG["counters"], "hot": {"start": 10, "stride": 5, "shards": 4}},
    "access": {PLAYED: {"issue": ["*"], "read": ["*"], "series": ["vat-*"], "void": ["vat-*"], "workers": ["*"]}},
}
FENCED = {**LAYOUTS, "counters": {**LAYOUTS["counters"], "orders": {"start": 5000, "shards": 3}}}


def fenced_checkout(directory: Path) -> Path:
    """cdk.json (FENCED) beside a ledger whose orders moved from LAYOUTS' layout above a fence at 6000."""
    config_file = directory / "cdk.json"
    config_file.write_text(json.dumps({"context": {"tickets": FENCED}}), encoding="utf-8")
    before, after = parse_config(LAYOUTS), parse_config(FENCED)
    ledger = record_services(None, {before.table_name: before})
    fenced = record_epochs(
        ledger.services[before.table_name],
        [change.epoch(6000) for change in layout_changes(after, ledger.services[before.table_name])],
    )
    write_ledger_file(
        directory / "tickets.lock.json",
        record_services(replace(ledger, services={before.table_name: fenced}), {after.table_name: after}),
    )
    return config_file


@pytest.fixture(scope="module", params=[*DOCUMENTS, "layouts"])
def server(request, tickets_servers, tmp_path_factory) -> Iterator[LocalTickets]:
    """The test kit's local server (a process of its own) on the tests' config: without and with the
    compatibility route, and with shards, series, access rules (its callers played) and a fenced key."""
    if request.param == "layouts":
        with LocalTickets(
            config_file=fenced_checkout(tmp_path_factory.mktemp("layouts")), play_callers=True
        ) as running:
            yield running
        return
    config = {**TICKETS_CONFIG, **WORKERS, **({} if request.param == "default" else {"compat": COMPAT})}
    running = tickets_servers(config)
    running.reset()
    yield running


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
    for package in (REPO / "lambda_src" / "tickets", REPO / "tickets_deploy", REPO / "tickets_local"):
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


def test_the_compat_document_is_the_default_one_and_its_route():
    """Why schemathesis runs on the compat config and not also on the default one (the same config without the
    compatibility route): every operation of the default document is in the compat one, the same."""
    route = f"/{COMPAT['path']}"
    assert route not in DOCUMENT["paths"] and route in COMPAT_DOCUMENT["paths"]
    paths = {path: item for path, item in COMPAT_DOCUMENT["paths"].items() if path != route}
    assert {**COMPAT_DOCUMENT, "paths": paths, "components": DOCUMENT["components"]} == DOCUMENT
    assert DOCUMENT["components"]["schemas"].items() <= COMPAT_DOCUMENT["components"]["schemas"].items()
    assert {name: part for name, part in COMPAT_DOCUMENT["components"].items() if name != "schemas"} == {
        name: part for name, part in DOCUMENT["components"].items() if name != "schemas"
    }
    # And the code serves the default config's routes the same: the compat path adds its route, nothing else.
    assert routes.served(Settings(compat_path=COMPAT["path"]))[:-1] == routes.served(Settings())


# On the compat config (every operation of the default one, and its route: the test above) and on the one with
# shards, series, access rules and a fenced key.
@pytest.mark.slow
@pytest.mark.parametrize("server", ["compat", "layouts"], indirect=True)
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
        *(["--header", f"{PLAY_CALLER_HEADER}: {PLAYED}"] if server.config_file is not None else []),
    ]
    environment = {
        **os.environ,
        **({"TICKETS_PLAY_CALLER": PLAYED} if server.config_file is not None else {}),
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
