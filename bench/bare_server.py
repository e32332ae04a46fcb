"""The floor a local server's answer is measured against (bench/local.py): Python's own HTTP server answering every
keep-alive GET (and POST) with one constant JSON, Nagle's algorithm off, in a process of its own as the test kit's
server is.

`python -m bench.bare_server` prints its port and serves until its standard input closes.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = b'{"key":"bare","ticket":1}'


class _Constant(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # TCP_NODELAY: its headers and body, written apart, go at once

    def do_GET(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    do_POST = do_GET  # so that a client's POST (TicketsClient.next) can be timed against it too

    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Constant)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # until whoever started it ends
    return 0


if __name__ == "__main__":
    sys.exit(main())
