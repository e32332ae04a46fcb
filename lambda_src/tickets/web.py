"""A Function URL request and response (payload format 2.0), with no framework: what a handler reads
of the event and what it answers.

The dispatch (dispatch.py) answers from the route table; Powertools' resolver did the same for 22% of
a warm call (bench/README.md). The answer's shape is what that resolver built: status, body (text,
never base64), `isBase64Encoded: false`, the headers (a response's own first, then Content-Type,
then `Cache-Control: no-store`) and an empty cookie list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

compact_json = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps with options builds one per call
TEXT_PLAIN = "text/plain; charset=utf-8"
APPLICATION_JSON = "application/json"


@dataclass(frozen=True)
class Request:
    """The parts of a Function URL event the handlers read. `path` is normalised (no trailing slash);
    `method` is as sent (a Function URL sends it upper-case)."""

    event: dict[str, Any]  # as received: the caller (caller.py) and the idempotency record read it
    method: str
    path: str

    @property
    def raw_query_string(self) -> str | None:
        query: str | None = self.event.get("rawQueryString")
        return query

    @property
    def body(self) -> str | None:
        body: str | None = self.event.get("body")
        return body

    @property
    def is_base64_encoded(self) -> bool:
        return bool(self.event.get("isBase64Encoded"))

    @property
    def headers(self) -> dict[str, str]:
        """A Function URL lower-cases header names, so the event's own dict is looked up directly."""
        headers: dict[str, str] = self.event.get("headers") or {}
        return headers

    @property
    def request_id(self) -> str | None:
        request_id: str | None = (self.event.get("requestContext") or {}).get("requestId")
        return request_id


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: str
    headers: dict[str, str] = field(default_factory=dict)

    def to_result(self) -> dict[str, Any]:
        """The Function URL's result. A cached GET would hand one ticket to two callers: never cached."""
        headers = {**self.headers, "Content-Type": self.content_type, "Cache-Control": "no-store"}
        return {
            "statusCode": self.status,
            "body": self.body,
            "isBase64Encoded": False,
            "headers": headers,
            "cookies": [],
        }


def json_response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(status, APPLICATION_JSON, compact_json(body), headers or {})


def text_response(text: str) -> Response:
    return Response(200, TEXT_PLAIN, text)
