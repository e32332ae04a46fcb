"""The local server's own answers (tickets_local.local_paths): its documents, the reset, and a request over
Lambda's payload limit or malformed (read_body)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from email.message import Message
from io import BufferedIOBase

from tickets.errors import MethodNotAllowed, NotFound, PayloadTooLarge

from .events import MAX_REQUEST_BYTES, HttpResponse, error_response
from .local_paths import RESET_PATH

log = logging.getLogger("tickets_local")


def local_answer(method: str, answer: Callable[[], bytes]) -> HttpResponse:
    if method != "GET":
        refusal = error_response(405, MethodNotAllowed.code, "this path of the local server accepts GET")
        return HttpResponse(405, [*refusal.headers, ("Allow", "GET")], refusal.body)
    return HttpResponse(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], answer())


def reset_answer(method: str, reset: Callable[[], None] | None) -> HttpResponse:
    if reset is None:
        return error_response(
            404, NotFound.code, f"{RESET_PATH} is off: start the server with --allow-reset to empty its tables"
        )
    if method != "POST":
        refusal = error_response(405, MethodNotAllowed.code, f"{RESET_PATH} accepts POST")
        return HttpResponse(405, [*refusal.headers, ("Allow", "POST")], refusal.body)
    try:
        reset()
    except Exception:
        log.exception("the reset failed")
        return error_response(500, "reset_failed", "the reset failed; see the server's log")
    return HttpResponse(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], b'{"reset":true}')


def too_large() -> HttpResponse:
    return error_response(
        413, PayloadTooLarge.code, f"the request is over {MAX_REQUEST_BYTES} bytes, Lambda's payload limit"
    )


_MAX_CHUNK_LINE = 1024


def read_body(headers: Message, rfile: BufferedIOBase) -> bytes | HttpResponse:
    """A request's body, by its Content-Length or chunked; a refusal if malformed or over Lambda's payload limit."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _read_chunked(rfile)
    try:
        length = int(headers.get("Content-Length") or 0)
    except ValueError:
        length = -1
    if length < 0:
        return error_response(400, "bad_request", "the Content-Length header is not a number")
    if length > MAX_REQUEST_BYTES:
        return too_large()
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
            return too_large()
        body += rfile.read(size)
        rfile.readline(_MAX_CHUNK_LINE)
