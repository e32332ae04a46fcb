"""Loopback HTTP servers answering every request with one constant body, Nagle's algorithm off; `python -m
bench.bare_server` (the floor of bench/local.py) prints its port and serves until its standard input closes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = b'{"key":"bare","ticket":1}'


@contextmanager
def serving(answer: bytes = ANSWER, content_type: str = "application/json") -> Iterator[str]:
    """A server on a thread answering `answer` to every request, while open; yields its URL."""

    class Constant(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive
        disable_nagle_algorithm = True  # TCP_NODELAY: its headers and body, written apart, go at once

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_POST = do_GET  # TicketsClient.next and SSM's calls POST

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Constant)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    with serving() as url:
        print(url.rsplit(":", 1)[1], flush=True)
        sys.stdin.read()  # until whoever started it ends
