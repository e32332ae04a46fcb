"""The OpenAPI document (tickets_local/openapi.py), derived from the code: valid, current (openapi.json is the
default config's), the compatibility route only when configured, exactly the error codes tickets/errors.py has,
and openapi_parts.json's prose naming only what the code has (a stale description fails here). Over HTTP and
against the real handler: tests/functional/test_openapi.py and test_openapi_answers.py."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate
from openapi_support import DOCUMENT, dereference, operations

from tickets import __version__, errors, messages
from tickets.routes import ROUTES, compat_route
from tickets.settings import Settings
from tickets_local import openapi

REPO = Path(__file__).resolve().parents[2]
COMPAT_DOCUMENT = openapi.document(Settings(compat_path="v1.counter"))
DOCUMENTS = {"default": DOCUMENT, "compat": COMPAT_DOCUMENT}
PARTS = json.loads((REPO / "tickets_local" / "openapi_parts.json").read_text())


def error_codes(response: dict[str, Any]) -> set[str]:
    """The `error` codes an error answer may carry; none for an answer that is not an error of ours."""
    schema = dereference(response).get("content", {}).get("application/json", {}).get("schema", {})
    codes = set()
    for branch in schema.get("anyOf", [schema]):  # anyOf: ours, or the Function URL's own (403)
        parts = branch.get("allOf", [])
        if {"$ref": "#/components/schemas/Error"} in parts:
            codes |= {code for part in parts for code in part.get("properties", {}).get("error", {}).get("enum", [])}
    return codes


@pytest.mark.parametrize("document", list(DOCUMENTS.values()), ids=list(DOCUMENTS))
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


def test_every_route_is_described_and_every_description_names_what_the_code_has():
    """openapi_parts.json is prose only, keyed by what the code defines: each route's handler, each message and
    its fields, each query parameter, each error response; a key the code no longer has is stale prose."""
    routes = (*ROUTES, compat_route("v1.counter"))
    assert set(PARTS["operations"]) <= {route.handler.rsplit(".", 1)[1] for route in routes}
    for route in routes:
        assert set(route.errors) <= set(PARTS["responses"]), route.handler
    defined = COMPAT_DOCUMENT["components"]["schemas"]
    for name, prose in PARTS["schemas"].items():
        assert name in defined, f"openapi_parts.json describes {name}, which no answer or request uses"
        for field in prose.get("properties", {}):
            assert field in defined[name]["properties"], f"{name}.{field}: no such field"
    used = {
        f"{parameter['in']}:{parameter['name']}"
        for _, _, operation in operations(COMPAT_DOCUMENT)
        for parameter in operation["parameters"]
    }
    assert set(PARTS["parameters"]) == used
    for name, prose in PARTS["operations"].items():
        assert set(prose.get("parameters", {})) <= used, name


def test_the_answers_shapes_are_the_message_types():
    """An answer's fields and which are required come from its TypedDict in tickets/messages.py, none other."""
    for message in (messages.Issued, messages.Block, messages.CounterState, messages.JournalEntry):
        schema = COMPAT_DOCUMENT["components"]["schemas"][message.__name__]
        assert list(schema["properties"]) == list(typing.get_type_hints(message))
        assert set(schema["required"]) == message.__required_keys__
        assert schema["additionalProperties"] is False
    config = COMPAT_DOCUMENT["components"]["schemas"]["CounterConfig"]
    assert {"epoch", "fence", "maxBlock", "start", "stride", "max", "shards"} <= set(config["properties"])
    assert set(config["required"]) == {"start", "stride", "max", "shards"}


def test_a_route_without_prose_is_documented_from_its_table_entry(monkeypatch):
    """A new route needs nothing by hand but its route (summary, errors) and handler: openapi_parts.json may say
    more. An error every route has, listed again, fails naming the route."""
    route = dataclasses.replace(compat_route("x"), handler="counters.nobody")
    monkeypatch.setattr(openapi, "served", lambda settings: (route,))
    operation = openapi.document(Settings())["paths"]["/x"]["get"]
    assert operation["description"] == operation["summary"] == route.summary and operation["tags"] == ["counters"]
    assert operation["responses"]["200"]["description"] == route.summary
    assert {"404", "409", "413", "422", "503"} <= set(operation["responses"])  # the route's errors
    twice = dataclasses.replace(route, errors=(*route.errors, "BadRequest"))
    monkeypatch.setattr(openapi, "served", lambda settings: (twice,))
    with pytest.raises(ValueError, match="counters.nobody's route lists \\['BadRequest'\\]"):
        openapi.document(Settings())
