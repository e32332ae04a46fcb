"""The local server's own answers: its paths (local_paths.py), and a body malformed or over Lambda's limit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from email.message import Message
from io import BufferedIOBase

from tickets.errors import MethodNotAllowed, NotFound, PayloadTooLarge

from .events import MAX_REQUEST_BYTES, HttpResponse, error_response
from .local_paths import RESET_PATH

log = logging.getLogger("tickets_local")
_MAX_CHUNK_LINE = 1024
_JSON = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
_TOO_LARGE = error_response(
    413, PayloadTooLarge.code, f"the request is over {MAX_REQUEST_BYTES} bytes, Lambda's payload limit"
)


def _not_allowed(allowed: str, where: str) -> HttpResponse:
    refusal = error_response(405, MethodNotAllowed.code, f"{where} accepts {allowed}")
    return HttpResponse(405, [*refusal.headers, ("Allow", allowed)], refusal.body)


def local_answer(method: str, answer: Callable[[], bytes]) -> HttpResponse:
    return (
        HttpResponse(200, _JSON, answer()) if method == "GET" else _not_allowed("GET", "this path of the local server")
    )


def reset_answer(method: str, reset: Callable[[], None] | None) -> HttpResponse:
    if reset is None:
        return error_response(
            404, NotFound.code, f"{RESET_PATH} is off: start the server with --allow-reset to empty its tables"
        )
    if method != "POST":
        return _not_allowed("POST", RESET_PATH)
    try:
        reset()
    except Exception:
        log.exception("the reset failed")
        return error_response(500, "reset_failed", "the reset failed; see the server's log")
    return HttpResponse(200, _JSON, b'{"reset":true}')


def read_body(headers: Message, rfile: BufferedIOBase) -> bytes | HttpResponse:
    """A request's body (Content-Length or chunked), or its refusal."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _read_chunked(rfile)
    try:
        length = int(headers.get("Content-Length") or 0)
    except ValueError:
        length = -1
    if length < 0:
        return error_response(400, "bad_request", "the Content-Length header is not a number")
    if length > MAX_REQUEST_BYTES:
        return _TOO_LARGE
    return rfile.read(length)


def _read_chunked(rfile: BufferedIOBase) -> bytes | HttpResponse:
    body = bytearray()
    while True:
        line = rfile.readline(_MAX_CHUNK_LINE)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            size = -1
        if size < 0:
            return error_response(400, "bad_request", "malformed chunked request body")
        if size == 0:
            while rfile.readline(_MAX_CHUNK_LINE) not in (b"\r\n", b"\n", b""):
                pass  # trailers carry nothing the event has a place for
            return bytes(body)
        if len(body) + size > MAX_REQUEST_BYTES:
            return _TOO_LARGE
        body += rfile.read(size)
        rfile.readline(_MAX_CHUNK_LINE)
