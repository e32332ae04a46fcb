"""The local Function URL (docs/reference/local-server.md): `LocalServer`, wrapped by `python -m tickets_local`.
Several may run in one process, each with its own app and client; POWERTOOLS_* are process-wide: the first decides."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools import Metrics

from tickets import timing
from tickets.errors import MethodNotAllowed, NotFound, PayloadTooLarge, clip
from tickets_admin.listing import counters, scan

from .deployment import LocalKeys, ServedLayout, deployment_from_config, load_deployment, open_keys
from .engines import make_backend
from .events import (
    ACCOUNT_ID,
    JSON_HEADERS,
    HttpRequest,
    HttpResponse,
    PlayedCallerError,
    error_response,
    function_url_event,
    http_response,
    played_identity,
)
from .http_base import KeepAliveServer, http_date, read_body, read_headers
from .reset_mark import ResetMark
from .testing import COUNTERS_PATH, OPENAPI_PATH, RESET_PATH

if TYPE_CHECKING:
    from tickets.app import App

log = logging.getLogger("tickets_local")

IDLE_KEEP_ALIVE_SECONDS = 30
# http.server takes a request line without a version for HTTP/0.9; a Function URL speaks HTTP/1.1 and 2 only.
_NO_VERSION = error_response(400, "bad_request", "the request line has no HTTP version: send HTTP/1.1")
_OWN_PATHS = {OPENAPI_PATH: "GET", COUNTERS_PATH: "GET", RESET_PATH: "POST"}  # each with the one method it accepts
FUNCTION_NAME = "tickets-local"
_ONE_INVOCATION_AT_A_TIME = threading.Lock()  # whichever server receives it, as Lambda does and the handler relies on
T = TypeVar("T")
_REFUSAL_CODES = {400: "bad_request", 408: "timeout"} | dict.fromkeys((413, 414, 431), PayloadTooLarge.code)


@dataclass
class LambdaContext:
    """The parts of Lambda's context object that Powertools and the handler read."""

    aws_request_id: str
    invoked_function_arn: str
    function_name: str = FUNCTION_NAME
    memory_limit_in_mb: int = 256
    deadline: float = field(default_factory=lambda: time.monotonic() + timing.FUNCTION_TIMEOUT_SECONDS)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class _HttpServer(KeepAliveServer):
    local: LocalServer  # set by LocalServer.start(): what the request handlers serve


class _RequestHandler(BaseHTTPRequestHandler):
    server: _HttpServer
    protocol_version = "HTTP/1.1"  # keep-alive: every response carries Content-Length
    server_version = "tickets-local"
    timeout = IDLE_KEEP_ALIVE_SECONDS

    def setup(self) -> None:
        super().setup()
        # Nagle off: an answer written in pieces would wait ~40 ms for the client's delayed ACK on keep-alive.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def parse_request(self) -> bool:
        """http.server's with read_headers for a plain HTTP/1.1 line; any other, http.server reads (and refuses)."""
        words = self.raw_requestline.split()
        if len(words) != 3 or words[2] != b"HTTP/1.1" or words[1].startswith(b"//"):
            return super().parse_request()
        self.command, self.path, self.request_version = (word.decode("iso-8859-1") for word in words)
        self.requestline = self.raw_requestline.decode("iso-8859-1").rstrip("\r\n")
        headers = read_headers(self.rfile)
        if isinstance(headers, tuple):
            self.send_error(*headers)
            return False
        self.headers = headers  # type: ignore[assignment]  # its get() and items() are all this handler reads
        self.close_connection = headers.get("Connection", "").lower() == "close"
        return headers.get("Expect", "").lower() != "100-continue" or self.handle_expect_100()

    def __getattr__(self, name: str) -> Any:
        # Every method goes to the function (its 405 with Allow), not to http.server's HTML 501.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def _serve(self) -> None:
        started = time.perf_counter()
        response = self._answer() if self.request_version != "HTTP/0.9" else _NO_VERSION
        # Logged before the answer leaves: a caller that stops the server once answered finds the line written.
        log.info(
            "%s %s %d %.1fms", self.command, clip(self.path), response.status, (time.perf_counter() - started) * 1000
        )
        self._send(response)
        self.server.local._spare_app()

    def _answer(self) -> HttpResponse:
        body = read_body(self.headers, self.rfile)
        if isinstance(body, HttpResponse):
            self.close_connection = True  # the rest of the body is still on the wire
            return body
        local, path = self.server.local, self.path.partition("?")[0]
        try:
            if path in _OWN_PATHS:
                return local._own_answer(self.command, path, self.headers)
            address, port = self.client_address[0], self.server.server_address[1]
            request = HttpRequest(
                self.command, self.path, self.request_version, [*self.headers.items()], body, address, port
            )
            event = function_url_event(request, play_callers=local._play_callers)
        except PlayedCallerError as err:
            return error_response(400, "bad_request", str(err))
        try:
            result = local.invoke(event)
        except Exception:
            log.exception("the handler raised; answering 502 as a Function URL does")
            return error_response(502, "bad_gateway", "the function failed; see the server's log")
        return http_response(result)

    def _send(self, response: HttpResponse) -> None:
        """The whole HTTP/1.1 answer in one write (http.server's end_headers writes the headers alone first)."""
        phrase = self.responses.get(response.status, ("",))[0]
        lines = [f"{self.protocol_version} {response.status} {phrase}", f"Date: {http_date(int(time.time()))}"]
        lines += [
            f"{name}: {value}"
            for name, value in response.headers
            if name.lower() not in ("content-length", "connection", "transfer-encoding", "date")
        ]
        lines.append(f"Content-Length: {len(response.body)}")
        if self.close_connection:
            lines.append("Connection: close")
        head = "".join(f"{line}\r\n" for line in lines).encode("latin-1", "strict") + b"\r\n"
        self.wfile.write(head if self.command == "HEAD" else head + response.body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, oversized headers) in the API's JSON, not HTML."""
        self.close_connection = True
        message = clip(message or HTTPStatus(code).phrase)  # http.server's messages quote the request line whole
        self._send(error_response(code, _REFUSAL_CODES.get(code, f"http_{code}"), message))
        log.warning("%s %s %d (%s)", self.command or "-", clip(self.path) if self.command else "-", code, message)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # what http.server would log, send_error and _serve already log, one line each


class LocalServer:
    """The deployed handler behind a local Function URL, served from a background thread."""

    app: App  # built by start(), anew at each reset
    _metrics: Metrics  # made by start(), after the Powertools environment it reads
    _arn: str  # the function's, as its context gives it
    _document: bytes  # this config's API document, rendered by start()

    def __init__(
        self,
        config_path: str | Path = "cdk.json",
        region: str | None = None,
        endpoint_url: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        verbose: bool = False,
        allow_reset: bool = False,
        config: Mapping[str, Any] | None = None,
        play_callers: bool = False,
        config_name: str | None = None,
        key_file: str | Path | None = None,
        backend: str | None = None,
        ledger: str | Path | None = None,
        without_ledger: bool = False,
        new_key_file: bool = False,
        reset_mark: str | Path | None = None,
    ):
        """Each argument is `python -m tickets_local`'s flag of that name (docs/reference/local-server.md); `config`,
        cdk.json's `tickets` object, replaces the file. The access rules are enforced only with `play_callers`."""
        self.config_name = config_name or (str(config_path) if config is None else "the config given to LocalServer")
        written = (
            load_deployment(config_path, region)
            if config is None
            else deployment_from_config(config, region, self.config_name)
        )
        self.layout = ServedLayout.of(written, config_path if config is None else None, ledger, without_ledger)
        self.deployment = self.layout.deployment  # above its fences, as deployed
        self._new_key_file = new_key_file
        self.backend = make_backend(backend, endpoint_url)
        self._address = (host, port)
        self._verbose = verbose
        self._allow_reset = allow_reset
        self._play_callers = play_callers
        self._rules = self.deployment.config.access if play_callers else None  # enforced only on signed requests
        self._key_file = key_file
        self._reset_mark = reset_mark
        self._mark: ResetMark | None = None  # opened by start()
        self.keys: LocalKeys | None = None  # the keys of opaque ids, when the config has opaque counters
        self._dynamodb: Any = None  # the apps' client, made by start(): kept across resets (~0.1 s to make)
        self._saved_environment: dict[str, str | None] = {}
        self._spare: App | None = None  # the app the next reset serves with, built after an answer left
        self._http: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("the server is not running; call start() first")
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"  # an AF_INET server's host is a str

    def start(self) -> LocalServer:
        try:
            self.layout.require(persistent=self.backend.persistent)
            self.backend.start()
            self._set_environment(
                {**self.deployment.powertools_environment(verbose=self._verbose), **self.backend.environment()}
            )
            self.backend.prepare(self.deployment)
            self._dynamodb = self.backend.client(self.deployment.region)
            table = self.layout.table(self._dynamodb)
            self.keys = open_keys(
                self.deployment.config, self._key_file, self.backend.persistent, table, self._new_key_file
            )
            self.app = self._build_app()
            self._mark = ResetMark(self._reset_mark) if self._reset_mark is not None else None
            self._metrics = Metrics()
            self._arn = f"arn:aws:lambda:{self.deployment.region}:{ACCOUNT_ID}:function:{FUNCTION_NAME}"
            # Imported after the environment: the handlers' Powertools read POWERTOOLS_* when created.
            from . import openapi

            self._document = openapi.render(self.deployment.settings)  # the document of this config
            self._http = _HttpServer(self._address, _RequestHandler)
            self._http.local = self
        except BaseException:
            self._release()
            raise
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.1}, name="tickets-local", daemon=True
        )
        self._thread.start()
        return self

    def reset(self) -> None:
        """Empty this server's tables (an endpoint's too, whoever uses them) and build the app anew, as a new
        execution environment would be, between two invocations."""
        if self._http is None:
            raise RuntimeError("the server is not running; call start() first")
        self.between_invocations(self._empty_and_rebuild)

    def _empty_and_rebuild(self) -> None:
        self.backend.empty(self.deployment)
        self.app, self._spare = self._spare or self._build_app(), None

    def _spare_app(self) -> None:
        """The next reset's app, built after an answer left, while no request waits (a suite resets per test)."""
        if (self._allow_reset or self._mark is not None) and self._spare is None and self._http is not None:
            with _ONE_INVOCATION_AT_A_TIME:  # a reset meanwhile (stdin's byte) waits for it rather than build another
                self._spare = self._spare or self._build_app()

    def between_invocations(self, call: Callable[[], T]) -> T:
        """Run `call` (a read of the server's own tables, a reset) while no invocation runs."""
        with _ONE_INVOCATION_AT_A_TIME:
            self._catch_up()
            return call()

    def invoke(self, event: dict[str, Any]) -> Any:
        """The handler's result for `event`, one invocation at a time, after a reset the test kit marked."""
        with _ONE_INVOCATION_AT_A_TIME:
            self._catch_up()
            # The function's clock starts when it runs, as in Lambda, not while queued (that would end in 503s)
            context = LambdaContext(aws_request_id=event["requestContext"]["requestId"], invoked_function_arn=self._arn)
            try:
                return self.app.lambda_handler(event, context)
            finally:
                # With POWERTOOLS_METRICS_DISABLED, Powertools' flush (3.37) keeps the metric set, which grows
                # until it prints itself at 100 values: cleared here, as the flush does in Lambda.
                self._metrics.clear_metrics()

    def _catch_up(self) -> None:
        """The reset the test kit marked since the last invocation, if any (reset_mark.py)."""
        mark = self._mark
        if mark is not None and (moved := mark.moved()) is not None:
            self._empty_and_rebuild()
            mark.seen(moved)  # not before: a reset that failed (a 502) is tried again, never skipped
            log.info("reset: every table emptied, the handler built anew")

    def _build_app(self) -> App:
        from tickets.app import create_app

        rules = self._rules
        return create_app(
            self.deployment.settings,
            self._dynamodb,
            self.deployment.counter_table,
            self.deployment.idempotency_table,
            region=self.deployment.region,
            series_table=self.deployment.series_table,
            workers_table=self.deployment.workers_table,
            access=None if rules is None else lambda: rules,
            opaque_keys=self.keys.stored if self.keys is not None else None,
            config_name=self.config_name,
        )

    def _own_answer(self, method: str, path: str, headers: Any) -> HttpResponse:
        """The paths the server answers itself; with callers played, by their rules too."""
        if path == RESET_PATH and not self._allow_reset:
            return error_response(
                404, NotFound.code, f"{RESET_PATH} is off: start the server with --allow-reset to empty its tables"
            )
        caller = played_identity(headers) if self._play_callers and path != RESET_PATH else None
        if method != (allowed := _OWN_PATHS[path]):
            where = RESET_PATH if path == RESET_PATH else "this path of the local server"
            refusal = error_response(405, MethodNotAllowed.code, f"{where} accepts {allowed}")
            return HttpResponse(405, [*refusal.headers, ("Allow", allowed)], refusal.body)
        if path == RESET_PATH:
            try:
                self.reset()
            except Exception:
                log.exception("the reset failed")
                return error_response(500, "reset_failed", "the reset failed; see the server's log")
            return HttpResponse(200, JSON_HEADERS, b'{"reset":true}')
        if path == OPENAPI_PATH:
            return HttpResponse(200, JSON_HEADERS, self._document)
        # read between invocations, only the keys the caller may read
        table, rules = self.deployment.counter_table, self._rules
        listed = self.between_invocations(lambda: counters(scan(self.app.dynamodb, table)))
        if rules is not None and caller is not None:
            listed = [each for each in listed if rules.allows(caller, "read", each["key"])]
        return HttpResponse(200, JSON_HEADERS, json.dumps({"counters": listed}, separators=(",", ":")).encode())

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.close_connections()
            self._http.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._http = None
        self._release()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _set_environment(self, values: dict[str, str | None]) -> None:
        for name, value in values.items():
            self._saved_environment.setdefault(name, os.environ.get(name))
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _release(self) -> None:
        self._dynamodb = None
        if self._mark is not None:
            self._mark.close()
        if self.keys is not None:
            self.keys.close()
        self.backend.stop()
        self._set_environment(dict(self._saved_environment))  # each as it was
        self._saved_environment.clear()
