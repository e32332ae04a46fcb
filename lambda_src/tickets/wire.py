"""The Function URL request as a handler reads it, and the response it answers, in the shape Powertools' resolver
built (building them with it cost a fifth of a warm call: bench/README.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

compact_json = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps with options builds one per call


@dataclass(frozen=True)
class Request:
    event: dict[str, Any]  # with its path normalised
    method: str
    path: str
    operation: str = "none"  # its route's

    @property
    def raw_query_string(self) -> str | None:
        return cast("str | None", self.event.get("rawQueryString"))

    @property
    def body(self) -> str | None:
        return cast("str | None", self.event.get("body"))

    @property
    def is_base64_encoded(self) -> bool:
        return bool(self.event.get("isBase64Encoded"))

    @property
    def headers(self) -> dict[str, str]:  # a Function URL lower-cases header names
        return cast("dict[str, str]", self.event.get("headers") or {})


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: str
    headers: dict[str, str] = field(default_factory=dict)

    def to_result(self) -> dict[str, Any]:
        # A cached GET would hand one ticket to two callers.
        headers = {**self.headers, "Content-Type": self.content_type, "Cache-Control": "no-store"}
        return {
            "statusCode": self.status,
            "body": self.body,
            "isBase64Encoded": False,
            "headers": headers,
            "cookies": [],
        }


def json_response(status: int, body: Mapping[str, object], headers: dict[str, str] | None = None) -> Response:
    return Response(status, "application/json", compact_json(body), headers or {})


def text_response(text: str) -> Response:
    return Response(200, "text/plain; charset=utf-8", text)
