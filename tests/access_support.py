"""What the access tests of every tier share (tests/functional/access/test_access.py, test_access_store.py,
tests/synth/test_access_stack.py): callers as the Function URL's IAM authorizer describes them, a stand-in for an
SSM client's GetParameters (FakeSsm), and one for SSM itself over loopback HTTP (ssm_stub: it records each request
and answers what the test says, an error included, or nothing at all, so that a read times out)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ACCOUNT = "111122223333"


def role_session(name: str, account: str = ACCOUNT, session: str = "backend", org: str | None = None) -> dict:
    """What the URL's IAM authorizer says of a role session: the assumed-role ARN has no role path."""
    return {
        "accessKey": "ASIAEXAMPLE",
        "accountId": account,
        "callerId": f"AROAEXAMPLE{name.upper()[:6]}:{session}",
        "cognitoIdentity": None,
        "principalOrgId": org,
        "userArn": f"arn:aws:sts::{account}:assumed-role/{name}/{session}",
        "userId": f"AROAEXAMPLE{name.upper()[:6]}:{session}",
    }


def user(arn: str, account: str = ACCOUNT) -> dict:
    return {
        "accessKey": "AKIAEXAMPLE",
        "accountId": account,
        "callerId": "AIDAEXAMPLE",
        "cognitoIdentity": None,
        "principalOrgId": None,
        "userArn": arn,
        "userId": "AIDAEXAMPLE",
    }


class FakeSsm:
    """An SSM client's GetParameters on `values`; its first `failures` calls get no answer (botocore's error)."""

    def __init__(self, values: dict[str, str], failures: int = 0):
        self.values, self.failures, self.calls = values, failures, 0

    def get_parameters(self, Names: list[str], WithDecryption: bool = False) -> dict:  # noqa: N803 - botocore's
        from botocore.exceptions import EndpointConnectionError

        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise EndpointConnectionError(endpoint_url="https://ssm.us-east-1.amazonaws.com/")
        return {
            "Parameters": [{"Name": name, "Value": self.values[name]} for name in Names if name in self.values],
            "InvalidParameters": [name for name in Names if name not in self.values],
        }


@dataclass(frozen=True)
class Seen:
    """One request as the stub received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


# (status, the JSON body) for each request, or None: never answer (the client's read times out).
Answer = Callable[[Seen], "tuple[int, dict[str, Any]] | None"]


@dataclass
class SsmStub:
    url: str
    answer: Answer
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)  # set: unanswered requests end


def values_answer(values: dict[str, str], kind: str = "String") -> Answer:
    """GetParameters on `values`, as SSM answers it (every field a parameter has)."""

    def answer(seen: Seen) -> tuple[int, dict[str, Any]]:
        names = seen.body["Names"]
        return 200, {
            "Parameters": [
                {
                    "Name": name,
                    "Type": kind,
                    "Value": values[name],
                    "Version": 3,
                    "LastModifiedDate": 1764288000.5,
                    "ARN": f"arn:aws:ssm:us-east-1:111122223333:parameter/{name}",
                    "DataType": "text",
                }
                for name in names
                if name in values
            ],
            "InvalidParameters": [name for name in names if name not in values],
        }

    return answer


def error_answer(status: int, code: str, message: str) -> Answer:
    """An error as SSM's JSON protocol sends it: the code in `__type` (with its namespace), a message."""
    return lambda seen: (status, {"__type": f"com.amazonaws.ssm#{code}", "message": message})


@contextmanager
def ssm_stub(answer: Answer) -> Iterator[SsmStub]:
    stub = SsmStub("", answer)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen = Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"))
            stub.seen.append(seen)
            answered = stub.answer(seen)
            if answered is None:
                stub.release.wait(30)
                self.close_connection = True
                return
            status, body = answered
            payload = json.dumps(body).encode()
            head = (
                f"HTTP/1.1 {status} X\r\nContent-Type: application/x-amz-json-1.1\r\n"
                f"Content-Length: {len(payload)}\r\nx-amzn-RequestId: stub\r\n\r\n"
            )
            self.wfile.write(head.encode() + payload)  # one write: no wait on a delayed acknowledgement

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    """An address where nothing listens: a connection there is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
