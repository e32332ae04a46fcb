"""The API's OpenAPI document, for one deployment's settings: the paths from the route table
(tickets.routes), everything else (operations, parameters, answers, errors) from openapi_parts.json.

The local server serves the document of its config at GET /_local/openapi.json (with the compatibility
route when configured, at its path). The repository's openapi.json is the document of the default config:
`make generated` (or `python -m tickets_local.openapi > openapi.json`) writes it, and
tests/functional/test_openapi.py checks it is current.
"""

from __future__ import annotations

import copy
import json
import sys
from functools import cache
from importlib import resources
from typing import Any

import tickets
from tickets.routes import Route, served
from tickets.settings import Settings

PARTS = "openapi_parts.json"  # package data of tickets_local (pyproject.toml)


@cache
def _parts() -> dict[str, Any]:
    parts: dict[str, Any] = json.loads(resources.files(__package__ or "tickets_local").joinpath(PARTS).read_text())
    return parts


def document(settings: Settings) -> dict[str, Any]:
    """The OpenAPI document of a deployment with these settings (only the compatibility path matters)."""
    parts = copy.deepcopy(_parts())
    doc: dict[str, Any] = parts["document"]
    routes = served(settings)
    doc["info"] = {"title": doc["info"]["title"], "version": tickets.__version__, **doc["info"]}
    doc["components"]["headers"]["Allow"]["schema"]["enum"] = list(dict.fromkeys(route.allow for route in routes))
    components = doc.pop("components")
    return {**doc, "paths": {route.path: _path_item(route, parts) for route in routes}, "components": components}


def render(settings: Settings) -> bytes:
    return (json.dumps(document(settings), indent=2, ensure_ascii=False) + "\n").encode()


def _path_item(route: Route, parts: dict[str, Any]) -> dict[str, Any]:
    """The route's operations: one per method, alike but for their ids and the request body (POST only)."""
    operation = parts["operations"][route.handler.__name__]  # its documentation, by the handler's name
    item = {}
    for method in route.methods:
        described = {
            "operationId": _operation_id(route, method),
            "summary": route.summary,
            "description": operation["description"],
            "tags": operation["tags"],
            "parameters": [parts["pathParameters"][name] for name in route.parameters] + operation["parameters"],
        }
        if method == "POST" and "requestBody" in operation:
            described["requestBody"] = operation["requestBody"]
        item[method.lower()] = {**described, "responses": operation["responses"]}
    return item


def _operation_id(route: Route, method: str) -> str:
    first, *rest = route.handler.__name__.split("_")
    suffix = method.capitalize() if len(route.methods) > 1 and method != route.methods[0] else ""
    return first + "".join(word.capitalize() for word in rest) + suffix


def main() -> int:
    """Print the document of the default config: the repository's openapi.json."""
    sys.stdout.buffer.write(render(Settings()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
