"""HTTP-level rules of the API, free of any framework: what a request may say and how an answer is rendered."""

from __future__ import annotations

import base64
import binascii
import functools
import json
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, unquote

from .errors import BadRequest, PayloadTooLarge, echo
from .keys import MAX_BLOCK, MAX_COUNT, echo_count, parse_count, require_key

# /{key} answers the tickets as a list, /_blocks/{key} as a range.
TICKETS_ROUTE = "tickets"
BLOCKS_ROUTE = "blocks"
MAX_BODY_BYTES = 1024
MAX_PATH_CHARS = 256


@dataclass(frozen=True)
class Asked:
    key: str
    count: int
    named: bool = True  # False: no key was named, `key` is the route's default
    route: str = TICKETS_ROUTE

    @property
    def recorded(self) -> dict[str, Any]:
        """What an Idempotency-Key's record is checked against: {key, count}, as older ones, and a block's route."""
        return {"key": self.key, "count": self.count} | ({} if self.route == TICKETS_ROUTE else {"route": self.route})


def normalise_path(path: str) -> str:
    """`/orders/` is `/orders`: clients and proxies add trailing slashes freely."""
    return "/" + path.strip("/") if path != "/" else path


def decode_path_key(segment: str) -> str:
    if len(segment) > MAX_PATH_CHARS:
        raise BadRequest(f"the path is longer than {MAX_PATH_CHARS} characters")
    try:
        return require_key(unquote(segment, errors="strict"))
    except UnicodeDecodeError:
        raise BadRequest("the key in the path is not valid percent-encoded UTF-8") from None


def ticket_request(
    path_key: str | None, raw_query: str | None, body: bytes, default_key: str, route: str = TICKETS_ROUTE
) -> Asked:
    if not raw_query and not body.strip():  # the common request, `GET /orders`
        return Asked(default_key if path_key is None else decode_path_key(path_key), 1, path_key is not None, route)
    return merged_request(path_key, raw_query, body, default_key, route)


def merged_request(
    path_key: str | None, raw_query: str | None, body: bytes, default_key: str, route: str = TICKETS_ROUTE
) -> Asked:
    max_count = MAX_BLOCK if route == BLOCKS_ROUTE else MAX_COUNT
    # The raw query string: queryStringParameters joins a repeated parameter's values with commas.
    query = query_parameters_of(raw_query, ("key", "systemKey", "count"), "key (or systemKey) and count")
    fields = body_fields(body, ("key", "count"), '{"count": 10}')
    if "key" in fields and not isinstance(fields["key"], str):
        raise BadRequest("the body's key must be a string")
    # JSON has one number type: 3, 3.0 and 3e0 are one integer (as JSON Schema, and so openapi.json, says).
    if isinstance(count := fields.get("count"), float) and count.is_integer():
        fields["count"] = int(count)
    elif "count" in fields and (isinstance(count, bool) or not isinstance(count, int)):
        raise BadRequest(f"the body's count must be a JSON integer from 1 to {max_count}, got {echo_count(count)}")

    keys = {
        source: value
        for source, value in (
            ("path", decode_path_key(path_key) if path_key is not None else None),
            ("key", query.get("key")),
            ("systemKey", query.get("systemKey")),
            ("body", fields.get("key")),
        )
        if value is not None
    }
    if len(set(map(str, keys.values()))) > 1:
        raise BadRequest(f"the request names different keys ({', '.join(sorted(keys))}); name one")
    key = require_key(next(iter(keys.values()))) if keys else default_key

    counts = [value for value in (query.get("count"), fields.get("count")) if value is not None]
    parsed = {parse_count(value, max_count) for value in counts}
    if len(parsed) > 1:
        raise BadRequest("the query and the body ask for different counts; give one")
    return Asked(key=key, count=parsed.pop() if parsed else 1, named=bool(keys), route=route)


def state_request(path_key: str, raw_query: str | None, body: str | None) -> str:
    no_query_nor_body("GET /_counters/{key}", raw_query, body, hint="; name the key in the path")
    return decode_path_key(path_key)


def no_query_nor_body(route: str, raw_query: str | None, body: str | None, hint: str = "") -> None:
    if raw_query:
        raise BadRequest(f"{route} takes no query parameters{hint}")
    if body:
        raise BadRequest(f"{route} takes no body")


def query_parameters_of(raw_query: str | None, fields: tuple[str, ...], described: str | None = None) -> dict[str, str]:
    try:
        pairs = parse_qsl(raw_query or "", keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("the query string is not valid percent-encoded UTF-8") from None
    query: dict[str, str] = {}
    for name, value in pairs:
        if name not in fields:
            raise BadRequest(f"unknown query parameter {echo(name)}; use {described or ', '.join(fields)}")
        if name in query:
            raise BadRequest(f"{name} was repeated in the query string; give it once")
        query[name] = value
    return query


def request_body(raw: str | None, is_base64: bool, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    if not raw:
        return b""
    if len(raw) > max_bytes * 2:  # base64 is 4/3 of the bytes
        raise _too_large(max_bytes)
    try:
        body = base64.b64decode(raw, validate=True) if is_base64 else raw.encode("utf-8", "surrogatepass")
    except (binascii.Error, ValueError):
        raise BadRequest("the body is marked base64 but is not valid base64") from None
    if len(body) > max_bytes:
        raise _too_large(max_bytes)
    return body


def _too_large(max_bytes: int) -> PayloadTooLarge:  # made only when raised: a request's path makes no exception
    return PayloadTooLarge(f"the body is over {max_bytes} bytes; send a small JSON object or none")


def body_fields(body: bytes, allowed: tuple[str, ...], example: str) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        fields = json.loads(body, object_pairs_hook=unique_fields)
    except (ValueError, RecursionError):
        raise BadRequest(f"the body must be empty or a JSON object such as {example}") from None
    try:
        json.dumps(fields, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        surrogate = err.object[err.start : err.end]
        raise BadRequest(
            f"the body holds text that is not valid Unicode (a lone surrogate, {ascii(surrogate)}): "
            "send text as UTF-8, or escape a character past U+FFFF as its surrogate pair"
        ) from None
    if not isinstance(fields, dict):
        raise BadRequest(f"the body must be empty or a JSON object such as {example}")
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise BadRequest(f"unknown body field {echo(unknown[0])}; use {', '.join(allowed)}")
    return fields


def unique_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's fields, each given once: `{"count": 2, "count": 3}` means nothing sure."""
    fields: dict[str, Any] = {}
    for name, value in pairs:
        if name in fields:
            raise BadRequest(f"the body repeats the field {echo(name)}; give each field once")
        fields[name] = value
    return fields


@functools.lru_cache(maxsize=64)  # a caller sends the same Accept header on every request
def prefers_text(accept: str | None) -> bool:
    """True when text/plain outranks JSON, each by its first most specific range's quality (a browser's */*: JSON)."""
    best = {"text/plain": (-1, 0.0), "application/json": (-1, 0.0)}  # type -> (specificity, quality)
    for part in (accept or "").split(",")[:32]:
        media, *params = part.split(";")
        quality = 1.0
        for name, _, value in (param.partition("=") for param in params):
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        for wanted, (specificity, _) in list(best.items()):
            found = {wanted: 2, wanted.split("/")[0] + "/*": 1, "*/*": 0}.get(media.strip().lower(), -1)
            if found > specificity:
                best[wanted] = (found, quality)
    return best["text/plain"][1] > best["application/json"][1]


def issued_values(issued: dict[str, Any]) -> list[int] | list[str]:
    if "id" in issued:
        return cast("list[str]", issued.get("ids", [issued["id"]]))
    return cast("list[int]", issued.get("tickets", [issued["ticket"]]))


def render_text(values: list[int] | list[str]) -> str:
    return "".join(f"{value}\n" for value in values)
