"""The Python client against clients/conformance.json, the cases the TypeScript client's tests run too
(clients/typescript/test/conformance.test.ts): each case's scripted answers from a stub server on
127.0.0.1, and what the client must return or raise, how many requests it sends and how long it waits
before each retry. Also the Retry-After rules of docs/reference/clients.md, unit by unit."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from local_support import LoopbackHttp
from tickets_client import Block, TicketsClient, TicketsError, WorkerGrant
from tickets_client.client import retry_after

CASES = json.loads((Path(__file__).resolve().parents[2] / "clients" / "conformance.json").read_text())["cases"]
WARM_UP_PATH = "/_counters/warm-up"  # the runner's request before each case, not one of the case's


class ScriptedServer:
    """Answers the case's replies in order (the last one again once they run out); `drop` reads the
    request and closes the connection unanswered. Counts the requests of the case, and keeps the last one (method,
    path, JSON body or None) and the Idempotency-Keys they carried."""

    def __init__(self, replies: list[dict[str, Any]]):
        self.replies = replies
        self.requests = 0
        self.sent: dict[str, Any] = {}
        self.keys: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _reply(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == WARM_UP_PATH:
                    self._send(200, {}, json.dumps({"key": "warm-up", "last": 0}).encode())
                    return
                server.requests += 1
                server.sent = {"method": self.command, "path": self.path, "body": json.loads(body) if body else None}
                server.keys |= {self.headers["Idempotency-Key"]} if "Idempotency-Key" in self.headers else set()
                reply = server.replies[min(server.requests, len(server.replies)) - 1]
                if reply.get("drop"):
                    self.close_connection = True  # and nothing written
                    return
                body = reply["text"].encode() if "text" in reply else json.dumps(reply["body"]).encode()
                self._send(reply["status"], reply.get("headers", {}), body)

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _reply

            def log_message(self, *args: Any) -> None:
                pass

        self._handler = Handler

    def __enter__(self) -> ScriptedServer:
        self._http = LoopbackHttp(self._handler)
        return self

    @property
    def url(self) -> str:
        return self._http.url

    def __exit__(self, *exc: Any) -> None:
        self._http.stop()


def run_case(case: dict[str, Any]) -> tuple[Any, ScriptedServer, list[float]]:
    """(the call's result or its TicketsError, the server with what the case's call sent, the waits)."""
    call = case["call"]
    delays: list[float] = []
    with ScriptedServer(case["replies"]) as server:
        client = TicketsClient(server.url, max_attempts=call.get("maxAttempts", 5), sleep=delays.append)
        client.state("warm-up")  # the case's first attempt goes out on a kept-alive connection
        try:
            result = call_of(client, call)
        except TicketsError as error:
            result = error
    return result, server, delays


def call_of(client: TicketsClient, call: dict[str, Any]) -> Any:
    key, idempotent = call["key"], call.get("idempotent", True)
    calls = {
        "block": lambda: client.block(key, call["count"], idempotent=idempotent),
        "nextIds": lambda: client.next_ids(key, call.get("count", 1), idempotent=idempotent),
        "next": lambda: client.next(key, call.get("count", 1), idempotent=idempotent),
        "acquireWorker": lambda: client.acquire_worker(key, call.get("owner")),
        "renewWorker": lambda: client.renew_worker(key, call["worker"], call["epoch"]),
        "releaseWorker": lambda: client.release_worker(key, call["worker"], call["epoch"]),
        "listWorkers": lambda: client.list_workers(key),
    }
    return calls[call["method"]]()


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_conformance(case):
    result, server, delays = run_case(case)
    expect = case["expect"]
    if "error" in expect:
        assert isinstance(result, TicketsError), f"expected {expect['error']}, got {result!r}"
        assert {"status": result.status, "code": result.code} == expect["error"]
        assert result.retry_after == expect.get("retryAfter", result.retry_after)
    elif "grant" in expect:
        grant = expect["grant"]
        assert result == WorkerGrant(
            grant["pool"], grant["worker"], grant["epoch"], grant["expiresAt"], grant["ttlSeconds"]
        )
    elif "released" in expect or "pool" in expect:
        assert result == expect.get("released", expect.get("pool"))
    elif "block" in expect:
        assert result == Block(**expect["block"])
    elif "ids" in expect:
        assert result == expect["ids"]
    else:
        assert result == expect["tickets"]
    assert server.requests == expect["attempts"]
    assert server.sent == expect.get("sent", server.sent)
    assert len(server.keys) == expect.get("keys", len(server.keys))
    assert len(delays) == len(expect["delays"]), delays
    for delay, (low, high) in zip(delays, expect["delays"], strict=True):
        assert low <= delay <= high, (delays, expect["delays"])


def test_the_cases_cover_every_rule_of_docs_client_md():
    names = " ".join(case["name"] for case in CASES)
    for rule in ("retry-after", "IMF-fixdate", "rfc850-date", "asctime-date", "ticket true", "2^53", "dropped"):
        assert rule in names, rule


NOW = 4_133_980_799.0 - 3600  # an hour before Fri, 31 Dec 2100 23:59:59 GMT


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("7", 7.0),
        ("007", 7.0),
        (" 7 ", 7.0),  # optional whitespace around a field value
        ("99999999999999999999999", 30.0),  # capped
        ("Fri, 31 Dec 2100 23:59:59 GMT", 30.0),  # an hour ahead: capped
        ("Fri, 31 Dec 2100 22:59:59 GMT", 0.0),  # now
        ("Fri, 31 Dec 2100 21:59:59 GMT", 0.0),  # gone by
    ],
)
def test_retry_after_delay_seconds_and_dates(value, seconds):
    assert retry_after(value, now=NOW) == seconds


def test_retry_after_dates_are_counted_from_now():
    assert retry_after("Fri, 31 Dec 2100 23:59:59 GMT", now=4_133_980_799.0 - 12) == 12.0
    assert retry_after("Friday, 31-Dec-00 23:59:59 GMT", now=4_133_980_799.0 - 12) == 12.0
    assert retry_after("Fri Dec 31 23:59:59 2100", now=4_133_980_799.0 - 12) == 12.0


@pytest.mark.parametrize("value", ["", None, "nan", "inf", "-inf", "0x10", "+5", "1.5", "1e1", "٣", "5 s", "soon"])
def test_retry_after_values_outside_rfc_9110_are_ignored(value):
    assert retry_after(value) is None
