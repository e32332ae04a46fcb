"""The API document as the tests read it: openapi.json (the default config's, derived from the code by
tickets_local/openapi.py), its operations and its `$ref`s resolved (standard library only: the unit tier uses it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DOCUMENT = json.loads((Path(__file__).resolve().parents[1] / "openapi.json").read_text())
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


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
