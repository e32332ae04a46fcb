"""Helpers for the tests of the local server and the client: configs, raw HTTP, a scripted stub
server, and an independent SigV4 check."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest

from common import EXAMPLE_CONFIG
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import INIT_COMMAND, ledger_path_beside, record_services, write_ledger_file
from tickets_deploy.rules import ConfigError
from tickets_local.engines import free_port

REPO = Path(__file__).resolve().parent.parent
DYNALITE = REPO / "node_modules" / ".bin" / "dynalite"
DYNALITE_START_ATTEMPTS = 5

# cdk.json's `tickets` for the tests: the README's example (one region, one lane per key, so every key
# is dense), plus a key of its own for the load test.
SERIES_KEY = "vat-invoices"  # a journaled series (docs/reference/series.md), with its own table
TICKETS_CONFIG = {
    **EXAMPLE_CONFIG,
    "counters": {**EXAMPLE_CONFIG["counters"], "load": {"start": 700000}},
    "series": {SERIES_KEY: {"start": 1, "format": "V-{series}-{n:05}"}},
}


class SerialMotoServer:
    """moto in server mode on 127.0.0.1, answering one request at a time.

    DynamoDB applies the writes to one item one at a time; moto does not (concurrent updates of one
    item in moto lose writes). A lock around each request gives moto DynamoDB's atomicity per request,
    so two clients (the local server and tickets_admin) can write concurrently, as they would on AWS.
    Its state is process-wide (moto's backends): it is reset when the server starts and stops."""

    def __enter__(self) -> SerialMotoServer:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        moto_app = DomainDispatcherApplication(create_backend_app)
        lock = threading.Lock()

        def one_at_a_time(environ: dict[str, Any], start_response: Any) -> list[bytes]:
            with lock:
                return list(moto_app(environ, start_response))

        self._server = make_server("127.0.0.1", 0, one_at_a_time, threaded=True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.reset()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        call(self.url, "/moto-api/reset", method="POST")

    def __exit__(self, *exc: Any) -> None:
        self.reset()
        self._server.shutdown()
        self._thread.join(timeout=10)


def write_cdk_json(directory: Path, tickets: dict[str, Any] = TICKETS_CONFIG) -> Path:
    """cdk.json, and beside it a ledger that records just this config, as `make init` would write it
    (tickets_admin checks cdk.json against it); none for an invalid config."""
    path = directory / "cdk.json"
    path.write_text(json.dumps({"app": "unused", "context": {"tickets": tickets}}))
    ledger_path = ledger_path_beside(path)
    try:
        config = parse_config(tickets)
    except ConfigError:
        ledger_path.unlink(missing_ok=True)
        return path
    write_ledger_file(ledger_path, record_services(None, {config.table_name: config}, None, INIT_COMMAND))
    return path


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names lower-cased; Set-Cookie lines joined by "\n"
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    url: str,
    path: str = "/",
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> Reply:
    """One raw HTTP exchange, nothing added but what http.client always sends (Host, Accept-Encoding)."""
    parts = urlsplit(url)
    own = connection is None
    connection = connection or http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        payload = response.read()
        merged: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            merged[key] = f"{merged[key]}\n{value}" if key in merged else value
        return Reply(response.status, merged, payload)
    finally:
        if own:
            connection.close()


def raw_exchange(server, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Bytes exactly as given on a fresh connection: for what http.client would not send."""
    with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), timeout=10) as connection:
        connection.sendall(request)
        # An answer to HEAD has headers only: its Content-Length describes a body never sent.
        response = http.client.HTTPResponse(connection, method="HEAD" if request.startswith(b"HEAD ") else "GET")
        response.begin()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


@dataclass
class StubServer:
    """Answers each request with the next scripted (status, headers, body) and records what came.
    `close_after_reply` drops the connection after each answer without saying so, like a server
    whose keep-alive timeout just passed. With `tls` (a server context), it serves https://localhost:PORT."""

    replies: list[tuple[int, dict[str, str], bytes]]
    close_after_reply: bool = False
    tls: ssl.SSLContext | None = None
    requests: list[Recorded] = field(default_factory=list)
    connections: int = 0

    def __enter__(self) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                stub.connections += 1

            def _reply(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stub.requests.append(
                    Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status, headers, payload = stub.replies[min(len(stub.requests), len(stub.replies)) - 1]
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                if stub.close_after_reply:
                    self.wfile.flush()
                    self.close_connection = True

            do_GET = do_POST = _reply

            def log_message(self, *args: Any) -> None:
                pass

        self._http = LoopbackHttp(Handler, self.tls)
        return self

    @property
    def url(self) -> str:
        return self._http.url

    def __exit__(self, *exc: Any) -> None:
        self._http.stop()


class LoopbackHttp:
    """A handler class served on 127.0.0.1 (a free port) from a daemon thread, until stop(): the stub
    servers' common part."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._tls = tls
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"https://localhost:{port}" if self._tls else f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def json_reply(status: int, body: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(body).encode()


def expected_sigv4_signature(method: str, path: str, headers: dict[str, str], body: bytes, secret_key: str) -> str:
    """The signature a SigV4 verifier (AWS) computes for a received request, written out from the
    SigV4 specification, independently of botocore. `headers` are the received ones, lower-cased."""
    authorization = headers["authorization"]
    credential = authorization.split("Credential=")[1].split(",")[0]
    _, date, region, service, _ = credential.split("/")
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    raw_path, _, raw_query = path.partition("?")
    query = sorted(
        (quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
        for k, _, v in (pair.partition("=") for pair in raw_query.split("&") if pair)
    )
    canonical_request = "\n".join(
        [
            method,
            quote(unquote(raw_path), safe="/-_.~"),
            "&".join(f"{k}={v}" for k, v in query),
            "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", headers["x-amz-date"], scope, hashlib.sha256(canonical_request.encode()).hexdigest()]
    )
    key = ("AWS4" + secret_key).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


@contextlib.contextmanager
def running_dynalite(path: Path | None = None) -> Iterator[str]:
    """A dynalite (npm, installed by `make test`) on a free loopback port: its endpoint URL. Skips
    where Node is missing, except in CI, which must run these tests. `path`: keep the tables in that
    directory (LevelDB), so a dynalite started again on it has them; by default, in memory."""
    if shutil.which("node") is None:
        reason = "node is not installed: the dynalite tests need Node.js (dynalite is an npm package)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must run them")
        pytest.skip(reason)
    if not DYNALITE.exists():
        pytest.fail(
            f"{DYNALITE.relative_to(REPO)} is missing: run `make test` (it runs npm install), "
            "or `npm install --no-package-lock`"
        )
    for _ in range(DYNALITE_START_ATTEMPTS):
        port = free_port()  # another process may take it before dynalite binds: then try another
        process = subprocess.Popen(
            [str(DYNALITE), "--host", "127.0.0.1", "--port", str(port), "--createTableMs", "0"]
            + ([] if path is None else ["--path", str(path)]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if _listening(process) and _serving(process, port):
            break
        process.kill()
        process.wait(timeout=10)
    else:
        pytest.fail(
            f"dynalite did not start in {DYNALITE_START_ATTEMPTS} attempts: {process.stderr.read().decode()[-500:]}"
        )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def assert_clients_get_distinct_dense_tickets(
    urls: list[str], key: str, start: int, clients: int = 16, per_client: int = 50
) -> None:
    """`clients` threads, each on a keep-alive connection to one of `urls` in turn, take `per_client` single
    tickets of `key` (a key of one lane, unused so far) at once: together every ticket from `start` on, once, each
    thread's increasing."""
    results: list[list[int]] = [[] for _ in range(clients)]
    failures: list[str] = []
    barrier = threading.Barrier(clients)

    def client(index: int) -> None:
        url = urls[index % len(urls)]
        connection = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=60)
        barrier.wait()
        for _ in range(per_client):
            reply = call(url, f"/{key}", connection=connection)
            if reply.status != 200:
                failures.append(f"{reply.status} {reply.body!r}")
                return
            results[index].append(reply.json()["ticket"])
        connection.close()

    began = time.perf_counter()
    workers = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    elapsed = time.perf_counter() - began

    tickets = [t for result in results for t in result]
    assert failures == [], failures[:3]
    assert len(tickets) == clients * per_client
    duplicates = len(tickets) - len(set(tickets))
    print(
        f"\n{len(tickets)} requests from {clients} clients to {len(urls)} server(s) in {elapsed:.1f} s "
        f"({len(tickets) / elapsed:.0f}/s), duplicates: {duplicates}"
    )
    assert duplicates == 0
    assert sorted(tickets) == list(range(start, start + clients * per_client))
    assert all(result == sorted(result) for result in results)  # each client's tickets increase


def dynalite_answers(endpoint: str) -> bool:
    """Whether a dynalite still answers: it dies when a request it reads is cut off (a kill -9 of the local server
    while it sends one), and is then started again on its tables (running_dynalite's `path`)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1").list_tables()
    except (BotoCoreError, ClientError):
        return False
    return True


def _listening(process: subprocess.Popen, seconds: float = 15) -> bool:
    """True once this dynalite says it listens ("Dynalite listening at: ..."); False if it exited first
    (the port was taken meanwhile). A connection alone could reach another process on the port: one
    another test run on this machine started there a moment before."""
    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    line = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                return False  # exited
            line += chunk
            if b"listening at" in line:
                return True
    return False


def _serving(process: subprocess.Popen, port: int, seconds: float = 15) -> bool:
    """True once dynalite accepts connections; False if it exited (the port was taken meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False
