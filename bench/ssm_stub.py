"""A stand-in for SSM's GetParameters, over loopback HTTP, for the cold start with access rules.

The function reads its rules at cold start with one GetParameters call (tickets/access/store.py); here
that call goes to this server (botocore honours AWS_ENDPOINT_URL_SSM), which answers the rules of
RULES_PRINCIPALS principals at once. What it measures is the function's side of the read (the SSM
client, the call, parsing the rules); SSM's own latency in a region (a few ms) is not in it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RULES_PRINCIPALS = (
    50  # the most an organisation-wide deployment is designed for (docs/how-to/call-from-another-account.md)
)
PARAMETER_NAMES = ("tickets-bench-rules-0", "tickets-bench-rules-1")


def rules_values() -> dict[str, str]:
    """Two parameters holding the rules of RULES_PRINCIPALS role ARNs between them."""
    rules = [
        (f"arn:aws:iam::111122223333:role/platform/service-{n:02d}", {"issue": [f"svc{n:02d}-*"], "read": ["*"]})
        for n in range(RULES_PRINCIPALS)
    ]
    half = len(rules) // 2
    return {name: json.dumps(dict(part)) for name, part in zip(PARAMETER_NAMES, (rules[:half], rules[half:]))}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    values: dict[str, str] = {}

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        asked = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        names = asked.get("Names", [])
        body = json.dumps(
            {
                "Parameters": [
                    {"Name": n, "Value": self.values[n], "Type": "String"} for n in names if n in self.values
                ],
                "InvalidParameters": [n for n in names if n not in self.values],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def ssm_stub() -> Iterator[dict[str, str]]:
    """The variables that point a child's function at the stub, with the rules' parameters, while open."""
    _Handler.values = rules_values()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {
            "AWS_ENDPOINT_URL_SSM": f"http://127.0.0.1:{server.server_address[1]}",
            "TICKETS_ACCESS_PARAMETERS": ",".join(PARAMETER_NAMES),
            "TICKETS_ACCESS_DIGEST": "bench",
        }
    finally:
        server.shutdown()
        server.server_close()
