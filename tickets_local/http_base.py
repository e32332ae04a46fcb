"""What the local server adds to http.server: a listener sized for load whose idle keep-alive connections can be
ended, headers read without the email parser (a third of a keep-alive request's time), bodies by Lambda's limit."""

from __future__ import annotations

import contextlib
import email.utils
import functools
import socket
import threading
from email.message import Message
from http.server import ThreadingHTTPServer
from io import BufferedIOBase
from typing import Any

from tickets.errors import PayloadTooLarge

from .events import MAX_REQUEST_BYTES, HttpResponse, error_response

MAX_HEADERS, MAX_LINE = 100, 65536  # http.client's limits (_MAXHEADERS, _MAXLINE)
_MAX_CHUNK_LINE = 1024
_TOO_LARGE = error_response(
    413, PayloadTooLarge.code, f"the request is over {MAX_REQUEST_BYTES} bytes, Lambda's payload limit"
)


class KeepAliveServer(ThreadingHTTPServer):
    request_queue_size = 128  # http.server's 5 made 16 clients connecting at once wait for SYN retries (p99 ~1 s)
    daemon_threads = True
    allow_reuse_address = True
    _connections: set[socket.socket]
    _connections_lock: threading.Lock

    def server_activate(self) -> None:
        self._connections, self._connections_lock = set(), threading.Lock()
        super().server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End idle keep-alive connections, whose threads would otherwise outlive the server."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)


class Headers(dict[str, str]):
    """A request's headers by lower-cased name (`get` takes any case), repeats comma-joined (cookies by `; `)."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


def read_headers(rfile: BufferedIOBase) -> Headers | tuple[int, str]:
    """The headers after a request line, or the refusal (status, message) of a line too long, too many, or no header
    (obs-fold included: RFC 9112 lets a server refuse it)."""
    headers = Headers()
    for _ in range(MAX_HEADERS + 1):
        line = rfile.readline(MAX_LINE + 1).decode("iso-8859-1")
        name, colon, value = line.partition(":")
        if line in ("\r\n", "\n", ""):
            return headers
        if len(line) > MAX_LINE or not colon or line[0] in " \t":
            return (431, "Line too long") if len(line) > MAX_LINE else (400, "Bad header line")
        name, value = name.lower(), value.strip(" \t\r\n")
        headers[name] = f"{headers[name]}{'; ' if name == 'cookie' else ','}{value}" if name in headers else value
    return 431, "Too many headers"


@functools.lru_cache(maxsize=2)
def http_date(second: int) -> str:
    return email.utils.formatdate(second, usegmt=True)


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
