"""HTTP on http.client keep-alive connections, one per request in flight (threads share a client), an idle one the
server closed replaced first, as undici does; proxies: docs/reference/clients.md. No retries, no redirects here."""

from __future__ import annotations

import http.client
import os
import select
import ssl
import urllib.request
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit


class Transport:
    """One origin's connections."""

    def __init__(self, scheme: str, host: str, port: int | None, timeout: float):
        proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies_environment().get(scheme)
        via = urlsplit(proxy if "://" in proxy else "http://" + proxy) if proxy else None  # host:port, as botocore
        if via and via.scheme != "http":  # TLS to the proxy itself would be TLS inside TLS, which http.client lacks
            raise ValueError(f"proxy {proxy!r}: only an http:// proxy is supported (https targets still get TLS)")
        address = (via.hostname or "", via.port or 80) if via else (host, port)
        netloc = f"[{host}]" if ":" in host else host
        self._prefix = f"http://{netloc}" + (f":{port}" if port else "") if via and scheme == "http" else ""
        self._idle: list[http.client.HTTPConnection] = []  # list.pop and append are atomic
        bundle = os.environ.get("AWS_CA_BUNDLE") or os.environ.get("SSL_CERT_FILE") or None
        context = ssl.create_default_context(cafile=bundle) if scheme == "https" else None

        def connect() -> http.client.HTTPConnection:
            if context is None:
                connection = http.client.HTTPConnection(*address, timeout=timeout)
            else:
                connection = http.client.HTTPSConnection(*address, timeout=timeout, context=context)
                if via:
                    connection.set_tunnel(host, port or 443)
            connection.response_class = _Response
            return connection

        self._connect = connect

    def send(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            connection = self._idle.pop()
        except IndexError:  # none idle: every one is in another thread's request
            connection = self._connect()
        try:
            if connection.sock is not None and _readable(connection.sock):
                connection.close()  # readable while idle: the server closed it (or sent what nobody asked for)
            connection.request(method, self._prefix + target, body or None, headers)
            response = connection.getresponse()
            answer = response.status, cast(dict[str, str], response.msg), response.read()
        except BaseException:
            connection.close()  # whatever is left on it belongs to no request
            raise
        self._idle.append(connection)
        return answer


def _readable(sock: Any) -> bool:
    """Whether a read would not block, by poll: select refuses a descriptor above 1023 (a busy process has those)."""
    if hasattr(select, "poll"):
        (poller := select.poll()).register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])  # Windows, whose select takes any socket


class _Response(http.client.HTTPResponse):
    """http.client's response with its headers read without its email parser (half the client's time of a request);
    the body's framing (chunked, Content-Length, keep-alive) decided as http.client's begin() decides it."""

    _method: str | None  # http.client's own, untyped in typeshed
    _read_status: Callable[[], tuple[str, int, str]]
    _check_close: Callable[[], bool]

    def begin(self) -> None:
        while (status_line := self._read_status())[1] == http.client.CONTINUE:
            self._read_headers()  # an interim answer's
        version, status, reason = status_line
        if not version.startswith("HTTP/1.") and version != "HTTP/0.9":
            raise http.client.UnknownProtocol(version)
        self.code, self.status, self.reason = status, status, reason.strip()
        self.version = 10 if version in ("HTTP/1.0", "HTTP/0.9") else 11
        self.headers = self.msg = self._read_headers()  # type: ignore[assignment]
        self.chunked, self.chunk_left = self.headers.get("transfer-encoding", "").lower() == "chunked", None
        length = self.headers.get("content-length", "").strip()
        self.length = int(length) if length.isdigit() and not self.chunked else None
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        self.will_close = self._check_close() or (not self.chunked and self.length is None)

    def _read_headers(self) -> dict[str, str]:
        """The headers by lower-cased name, a repeated one's values joined by commas."""
        headers: dict[str, str] = {}
        for _ in range(101):  # http.client's limits: 100 headers of at most 65536 bytes each
            line = self.fp.readline(65537)
            if len(line) > 65536:
                raise http.client.LineTooLong("header line")
            if line in (b"\r\n", b"\n", b""):
                return headers
            name, _, value = (part.strip() for part in line.decode("iso-8859-1").partition(":"))
            headers[name.lower()] = f"{headers[name.lower()]}, {value}" if name.lower() in headers else value
        raise http.client.HTTPException("got more than 100 headers")
