"""The local Function URL over real HTTP on 127.0.0.1: routes, the event it builds, the answers
it translates, no duplicates under concurrency, another DynamoDB through --endpoint-url, and
`python -m tickets_local` as `make serve` runs it."""

from __future__ import annotations

import ast
import base64
import http.client
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest

from local_support import TICKETS_CONFIG, assert_clients_get_distinct_dense_tickets, call, raw_exchange, write_cdk_json
from tickets.tables import COUNTER_KEY, create_table_arguments
from tickets_deploy.rules import ConfigError
from tickets_local import server as server_module
from tickets_local.deployment import ledger_refusal, load_deployment
from tickets_local.engines import BackendError, EndpointBackend, MemoryBackend
from tickets_local.events import MAX_REQUEST_BYTES, http_response
from tickets_local.reset_mark import ResetMark
from tickets_local.server import LocalServer

FIXTURE_EVENT = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "function_url_event.json").read_text())
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="class", params=["memory", "moto"])
def server(tickets_servers, request):
    """The test kit's server (a process of its own) on each backend in turn, its counters emptied for this class."""
    running = tickets_servers(TICKETS_CONFIG, backend=request.param)
    running.reset()
    return running


@pytest.fixture(scope="class")
def in_process_server(tmp_path_factory):
    """The server in this process, for the tests that reach into it (a patched invoker or handler, its log
    records, its sockets)."""
    with LocalServer(config_path=write_cdk_json(tmp_path_factory.mktemp("local"))) as running:
        yield running


def state(server, key: str) -> dict:
    reply = call(server.url, f"/_counters/{key}")
    assert reply.status == 200, reply.body
    return reply.json()


def snapshot(server, key: str) -> tuple[int, bytes]:
    """What /_counters says of `key`, including "never used", for before/after comparisons."""
    reply = call(server.url, f"/_counters/{key}")
    return reply.status, reply.body


@pytest.mark.slow
class TestRoutes:
    def test_default_key_on_root(self, server):
        reply = call(server.url, "/")
        assert reply.status == 200
        assert reply.json() == {"key": "default", "ticket": 1}
        assert reply.headers["content-type"] == "application/json"
        assert reply.headers["cache-control"] == "no-store"

    def test_key_in_path_query_and_alias_share_one_sequence(self, server):
        answers = [
            call(server.url, "/orders").json(),
            call(server.url, "/orders", method="POST").json(),
            call(server.url, "/?key=orders").json(),
            call(server.url, "/?systemKey=orders", method="POST").json(),
            call(server.url, "/orders/").json(),
        ]  # a trailing slash is the same path
        first = answers[0]["ticket"]
        assert first >= 5000  # orders starts at 5000 (earlier tests may have used some)
        assert [a["ticket"] for a in answers] == list(range(first, first + 5))
        assert {a["key"] for a in answers} == {"orders"}

    def test_count_gives_a_block_on_the_lane(self, server):
        reply = call(server.url, "/invoices?count=3")
        assert reply.status == 200
        assert reply.json() == {"key": "invoices", "ticket": 1, "tickets": [1, 11, 21]}
        assert state(server, "invoices")["last"] == 21

    def test_text_plain_when_preferred(self, server):
        reply = call(server.url, "/invoices?count=2", headers={"Accept": "text/plain"})
        assert reply.status == 200
        assert reply.headers["content-type"].startswith("text/plain")
        assert reply.body == b"31\n41\n"
        assert reply.headers["cache-control"] == "no-store"

    def test_counter_state_issues_nothing(self, server):
        call(server.url, "/statekey?count=5")
        first, second = state(server, "statekey"), state(server, "statekey")
        assert first == second
        assert first["last"] == 5 and first["step"] == 1

    def test_unknown_counter_state_is_404(self, server):
        reply = call(server.url, "/_counters/never-used")
        assert reply.status == 404
        assert reply.json()["error"] == "not_found"

    @pytest.mark.parametrize("path", ["/a/b", "/_counters/a/b", "/a/b/c/"])
    def test_unknown_paths_are_404(self, server, path):
        reply = call(server.url, path)
        assert reply.status == 404
        assert reply.json()["error"] == "not_found"
        assert reply.headers["cache-control"] == "no-store"

    @pytest.mark.parametrize(
        "method, path, allow",
        [("DELETE", "/orders", "GET, POST"), ("PUT", "/", "GET, POST"), ("POST", "/_counters/orders", "GET")],
    )
    def test_wrong_methods_are_405_with_allow(self, server, method, path, allow):
        before = snapshot(server, "orders")
        reply = call(server.url, path, method=method)
        assert reply.status == 405
        assert reply.json()["error"] == "method_not_allowed"
        assert reply.headers["allow"] == allow
        assert snapshot(server, "orders") == before

    def test_any_method_reaches_the_handler(self, server):
        reply = call(server.url, "/orders", method="TRACE")
        assert reply.status == 405 and reply.json()["error"] == "method_not_allowed"

    def test_a_malformed_request_line_gets_a_json_400(self, server):
        status, headers, body = raw_exchange(server, b"GET /ord ers HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 400 and headers["cache-control"] == "no-store"
        assert json.loads(body)["error"] == "bad_request"

    @pytest.mark.parametrize("method", [b"GET", b"POST"])
    def test_a_request_line_without_a_version_gets_a_json_400_and_issues_nothing(self, server, method):
        # http.server takes "GET /path" for HTTP/0.9 (whose answers have no status line): the answer used to
        # crash the request's thread after the function had issued a ticket, and the client saw none.
        before = snapshot(server, "noversion")
        status, headers, body = raw_exchange(server, method + b" /noversion\r\n\r\n")
        assert status == 400 and headers["connection"] == "close" and headers["cache-control"] == "no-store"
        assert json.loads(body)["error"] == "bad_request"
        assert snapshot(server, "noversion") == before

    @pytest.mark.parametrize(
        "request_line",
        [
            b"GET /ord ers" + b"x" * 6000 + b" HTTP/1.1",  # http.server quotes the whole line in its message
            b"GET /" + b"k" * 6000 + b" HTTP/1.1",
            b"GET /?key=" + b"k" * 6000 + b" HTTP/1.1",
            b"GET /_counters/" + b"k" * 6000 + b" HTTP/1.1",
        ],
        ids=["malformed", "path", "query", "state"],
    )
    def test_an_error_and_its_log_line_repeat_little_of_a_huge_request(self, in_process_server, request_line, caplog):
        with caplog.at_level(logging.INFO, logger="tickets_local"):
            status, headers, body = raw_exchange(
                in_process_server, request_line + b"\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            deadline = time.monotonic() + 10  # the server logs just after it answers

            def logged() -> list[str]:
                return [record.getMessage() for record in caplog.records if record.name == "tickets_local"]

            while not logged() and time.monotonic() < deadline:
                time.sleep(0.01)
        assert 400 <= status < 500 and headers["cache-control"] == "no-store"
        assert json.loads(body)["error"] and len(body) < 1024, body[:200]
        lines = logged()
        assert lines and all(len(line) < 1024 for line in lines), [len(line) for line in lines]

    def test_chunked_body_is_reassembled(self, server):
        chunks = b'5\r\n{"cou\r\n7\r\nnt": 2}\r\n0\r\n\r\n'
        status, _, body = raw_exchange(
            server, b"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
        )
        assert (status, json.loads(body)["tickets"]) == (200, [1, 2])
        status, _, body = raw_exchange(
            server, b"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nxx"
        )
        assert (status, json.loads(body)["error"]) == (400, "bad_request")

    def test_head_sends_length_but_no_body(self, server):
        reply = call(server.url, "/orders", method="HEAD")
        assert reply.status == 405  # the API serves GET and POST; HEAD must not issue a ticket
        assert int(reply.headers["content-length"]) > 0 and reply.body == b""

    def test_json_body_arrives_as_text(self, server):
        reply = call(
            server.url, "/bodykey", method="POST", body=b'{"count": 2}', headers={"Content-Type": "application/json"}
        )
        assert reply.json() == {"key": "bodykey", "ticket": 1, "tickets": [1, 2]}

    def test_binary_body_arrives_base64_encoded(self, server):
        # Not UTF-8, so the event carries it base64-encoded; the handler decodes it and
        # json.loads reads UTF-16 bytes: the count only arrives if the round trip is exact.
        body = '{"count": 3}'.encode("utf-16")
        reply = call(server.url, "/binarykey", method="POST", body=body)
        assert reply.status == 200, reply.body
        assert reply.json()["tickets"] == [1, 2, 3]

    @pytest.mark.parametrize(
        "path, body",
        [
            ("/orders?count=0", None),
            ("/orders?count=1001", None),
            ("/orders?count=x", None),
            ("/orders?colour=red", None),
            ("/orders?key=invoices", None),
            ("/bad%20key", None),
            ("/orders", b"\xff\xfe\x00garbage"),
            ("/orders", b"[1, 2]"),
        ],
    )
    def test_bad_request_leaves_the_counter_unchanged(self, server, path, body):
        call(server.url, "/orders")  # so the counter exists and has a state to keep
        before = snapshot(server, "orders")
        reply = call(server.url, path, method="POST", body=body)
        assert reply.status == 400, reply.body
        assert reply.json()["error"] == "bad_request"
        assert snapshot(server, "orders") == before

    @pytest.mark.parametrize(
        "path, method, body, message",
        [
            ("/orders?count=2&count=2", "GET", None, "count was repeated"),
            ("/orders", "POST", b'{"count": 2, "count": 3}', "repeats the field 'count'"),
            ("/_counters/orders?key=invoices", "GET", None, "no query parameters"),
            ("/_counters/orders", "GET", b"{}", "no body"),
        ],
    )
    def test_repeats_and_state_reads_with_input_are_400(self, server, path, method, body, message):
        call(server.url, "/orders")
        before = snapshot(server, "orders")
        reply = call(server.url, path, method=method, body=body)
        assert (reply.status, reply.json()["error"]) == (400, "bad_request")
        assert message in reply.json()["message"]
        assert snapshot(server, "orders") == before

    def test_request_over_lambda_payload_limit_is_413_without_invoking(self, in_process_server, monkeypatch):
        invoked = []
        monkeypatch.setattr(server_module.LocalServer, "invoke", lambda self, event: invoked.append(event))
        connection = http.client.HTTPConnection("127.0.0.1", int(in_process_server.url.rsplit(":", 1)[1]), timeout=10)
        connection.putrequest("POST", "/orders")
        connection.putheader("Content-Length", str(MAX_REQUEST_BYTES + 1))
        connection.endheaders(b"{}")  # the rest is never sent: the server must not wait for it
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"] == "too_large"
        assert invoked == []
        connection.close()

    def test_handler_exception_is_502_like_a_function_url(self, in_process_server, monkeypatch):
        def crash(self, event):
            raise RuntimeError("boom")

        monkeypatch.setattr(server_module.LocalServer, "invoke", crash)
        reply = call(in_process_server.url, "/orders")
        assert reply.status == 502
        assert reply.json()["error"] == "bad_gateway"

    def test_keep_alive_serves_many_requests_on_one_connection(self, server):
        connection = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]), timeout=10)
        tickets, sockets = [], []
        for _ in range(3):
            tickets.append(call(server.url, "/keepalive", connection=connection).json()["ticket"])
            sockets.append(connection.sock)
        connection.close()
        assert tickets == [1, 2, 3]
        assert sockets[0] is not None and all(sock is sockets[0] for sock in sockets)  # never reopened

    def test_answers_leave_at_once_in_one_write_with_nagle_off(self, in_process_server, monkeypatch):
        """Nagle's algorithm holds a response's second write until the client ACKs the first, and clients
        delay their ACKs (~40 ms): every keep-alive request after the first stalled. So each answer is
        one write, and the accepted socket has TCP_NODELAY (for any answer written otherwise)."""
        writes: list[bytes] = []
        original_setup = server_module._RequestHandler.setup

        def recording_setup(handler) -> None:
            original_setup(handler)
            sent = handler.wfile.write

            def write(data: bytes) -> int:
                writes.append(bytes(data))
                return sent(data)

            handler.wfile.write = write

        monkeypatch.setattr(server_module._RequestHandler, "setup", recording_setup)
        connection = http.client.HTTPConnection("127.0.0.1", int(in_process_server.url.rsplit(":", 1)[1]), timeout=10)
        replies = [
            call(in_process_server.url, path, connection=connection)
            for path in ("/nagle", "/nagle", "/_counters/nagle")
        ]
        this_client = connection.sock.getsockname()
        accepted = [sock for sock in list(in_process_server._http._connections) if sock.getpeername() == this_client]
        assert len(accepted) == 1
        assert accepted[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        connection.close()
        assert [reply.status for reply in replies] == [200, 200, 200]
        assert len(writes) == 3  # one per response: status line, headers and body together
        assert all(write.endswith(reply.body) for write, reply in zip(writes, replies))

    def test_the_request_handler_relies_on_no_private_attribute_of_http_server(self):
        # What it reads or writes of its own (self._x) it defines itself: http.server's private attributes
        # (_headers_buffer once) may change in any Python release.
        (handler,) = [
            node
            for node in ast.parse(Path(server_module.__file__).read_text()).body
            if isinstance(node, ast.ClassDef) and node.name == "_RequestHandler"
        ]
        used = {
            node.attr
            for node in ast.walk(handler)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        }
        defined = {node.name for node in handler.body if isinstance(node, ast.FunctionDef)} | {
            target.attr
            for node in ast.walk(handler)
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Attribute)
        }
        assert {name for name in used if name.startswith("_") and not name.startswith("__")} <= defined

    def test_idempotency_key_replays_the_answer(self, server):
        headers = {"Idempotency-Key": "local-test-1"}
        first = call(server.url, "/idem?count=2", method="POST", headers=headers)
        again = call(server.url, "/idem?count=2", method="POST", headers=headers)
        assert first.status == again.status == 200
        assert first.json() == again.json()
        assert state(server, "idem")["last"] == 2

    def test_event_has_the_shape_of_a_function_url_event(self, in_process_server, monkeypatch):
        events = []
        original = server_module.LocalServer.invoke

        def spy(self, event):
            events.append(event)
            return original(self, event)

        monkeypatch.setattr(server_module.LocalServer, "invoke", spy)
        call(
            in_process_server.url,
            "/orders/?key=orders&count=2&count=2",
            method="POST",
            body=b'{"count": 2}',
            headers={
                "User-Agent": "probe/1.0",
                "Cookie": "a=1; b=2",
                "X-Many": "one",
                "Accept": "text/plain",
                "Content-Type": "application/json",
            },
        )
        event = events[0]

        expected = {**FIXTURE_EVENT, "cookies": [], "queryStringParameters": {}, "body": ""}
        expected_context = {
            k: v for k, v in FIXTURE_EVENT["requestContext"].items() if k != "authorizer"
        }  # AWS adds it for AWS_IAM auth only
        assert set(event) == set(expected)
        for name, value in FIXTURE_EVENT.items():
            assert type(event[name]) is type(value), name
        assert set(event["requestContext"]) == set(expected_context)
        assert set(event["requestContext"]["http"]) == set(FIXTURE_EVENT["requestContext"]["http"])
        for name, value in expected_context.items():
            assert type(event["requestContext"][name]) is type(value), name
        assert {"x-forwarded-for", "x-forwarded-proto", "x-forwarded-port", "x-amzn-trace-id"} <= set(event["headers"])

        assert event["rawPath"] == "/orders/" and event["requestContext"]["http"]["path"] == "/orders/"
        assert event["rawQueryString"] == "key=orders&count=2&count=2"
        assert event["queryStringParameters"] == {"key": "orders", "count": "2,2"}
        assert event["cookies"] == ["a=1", "b=2"] and "cookie" not in event["headers"]
        assert all(name == name.lower() for name in event["headers"])
        assert event["headers"]["user-agent"] == "probe/1.0" == event["requestContext"]["http"]["userAgent"]
        assert event["requestContext"]["http"]["method"] == "POST"
        assert event["requestContext"]["http"]["sourceIp"] == "127.0.0.1"
        assert event["body"] == '{"count": 2}' and event["isBase64Encoded"] is False
        assert time.strptime(event["requestContext"]["time"], "%d/%b/%Y:%H:%M:%S +0000")
        assert abs(event["requestContext"]["timeEpoch"] / 1000 - time.time()) < 60

    def test_request_without_query_or_body_omits_them(self, in_process_server, monkeypatch):
        events = []
        original = server_module.LocalServer.invoke
        monkeypatch.setattr(
            server_module.LocalServer, "invoke", lambda self, event: events.append(event) or original(self, event)
        )
        call(in_process_server.url, "/orders", headers={"X-Twice": "1"})
        assert "queryStringParameters" not in events[0] and "body" not in events[0]
        assert "cookies" not in events[0] and events[0]["isBase64Encoded"] is False

    def test_sixteen_clients_get_distinct_dense_tickets(self, server):
        assert_clients_get_distinct_dense_tickets([server.url], "load", TICKETS_CONFIG["counters"]["load"]["start"])


class TestResponseTranslation:
    """What the server answers for each shape of handler result (Lambda's rules)."""

    def test_structured_response_with_cookies_and_base64_body(self):
        response = http_response(
            {
                "statusCode": 201,
                "headers": {"X-A": "1"},
                "cookies": ["s=1", "t=2"],
                "body": base64.b64encode(b"\x00\xffbin").decode(),
                "isBase64Encoded": True,
            }
        )
        assert response.status == 201
        assert response.body == b"\x00\xffbin"
        assert response.headers == [("X-A", "1"), ("Set-Cookie", "s=1"), ("Set-Cookie", "t=2")]

    @pytest.mark.parametrize("result", [{"key": "orders", "ticket": 5}, "plain text", 42, [1, 2], None])
    def test_anything_but_a_structured_response_is_200_json(self, result):
        response = http_response(result)
        assert response.status == 200
        assert ("Content-Type", "application/json") in response.headers
        assert json.loads(response.body) == result

    @pytest.mark.parametrize(
        "result",
        [
            {"statusCode": "200"},
            {"statusCode": 99},
            {"statusCode": 200, "body": {}},
            {"statusCode": 200, "body": "%%%", "isBase64Encoded": True},
        ],
    )
    def test_malformed_structured_response_is_502(self, result):
        response = http_response(result)
        assert response.status == 502
        assert json.loads(response.body)["error"] == "bad_gateway"


class TestConfig:
    def test_region_defaults_to_the_first_configured(self, tmp_path):
        tickets = {**TICKETS_CONFIG, "regions": {"eu-west-1": 1, "us-east-1": 0}, "regionSlots": 2}
        deployment = load_deployment(write_cdk_json(tmp_path, tickets), None)
        assert (deployment.region, deployment.slot) == ("eu-west-1", 1)

    def test_unconfigured_region_names_the_configured_ones(self, tmp_path):
        with pytest.raises(ConfigError, match="us-east-1") as error:
            load_deployment(write_cdk_json(tmp_path), "ap-south-1")
        assert "ap-south-1" in str(error.value)

    def test_tables_are_named_as_the_stack_names_them(self, tmp_path):
        """The counter table is cdk.json's tableName, so tickets_admin's default --table finds it."""
        default = load_deployment(write_cdk_json(tmp_path), None)
        assert (default.counter_table, default.idempotency_table) == (
            "tickets-counters",
            "tickets-counters-idempotency",
        )
        named = load_deployment(write_cdk_json(tmp_path, {**TICKETS_CONFIG, "tableName": "shop.tickets"}), None)
        assert (named.counter_table, named.idempotency_table) == ("shop.tickets", "shop.tickets-idempotency")

    def test_a_config_the_ledger_refuses_is_served_with_a_warning_naming_the_refusal(self, tmp_path):
        """make serve serves what cdk.json says, for trying a change; when synthesis would refuse it, the
        server says so at start, with synthesis's message, instead of passing for a config that deploys."""
        loose = {**TICKETS_CONFIG, "strictKeys": False}
        config_path = write_cdk_json(tmp_path, loose)  # and its ledger, as make init writes it
        assert ledger_refusal(config_path) is None
        own = {**loose, "counters": {**loose["counters"], "parcels": {"start": 1000, "stride": 7}}}
        config_path.write_text(json.dumps({"context": {"tickets": own}}), encoding="utf-8")
        refused = ledger_refusal(config_path)
        assert refused is not None and "counters.parcels: a new counter with start 1000, stride 7" in refused
        # A ledger kept elsewhere (--ledger PATH) is the one checked.
        ledger = (tmp_path / "tickets.lock.json").rename(tmp_path / "elsewhere.json")
        assert ledger_refusal(config_path) is None and ledger_refusal(config_path, ledger) == refused.replace(
            "tickets.lock.json", "elsewhere.json"
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "tickets_local", "--port", "0", "--exit-with-stdin", "--config", str(config_path)]
            + ["--ledger", str(ledger)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, err = server.communicate(input="", timeout=60)
        assert server.returncode == 0
        assert "warning: served as written, but synthesis would refuse it" in err and str(ledger) in err

    def test_invalid_config_names_the_field(self, tmp_path):
        with pytest.raises(ConfigError, match=r"tickets\.counters\.orders\.stride"):
            load_deployment(write_cdk_json(tmp_path, {**TICKETS_CONFIG, "counters": {"orders": {"stride": 0}}}), None)


@pytest.mark.slow
def test_second_region_serves_its_own_lane(tmp_path):
    tickets = {**TICKETS_CONFIG, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    with LocalServer(config_path=write_cdk_json(tmp_path, tickets), region="eu-west-1") as server:
        assert call(server.url, "/orders?count=3").json()["tickets"] == [5001, 5003, 5005]
        assert state(server, "orders")["region"] == {"slot": 1, "slots": 2}


@pytest.mark.slow
def test_two_servers_in_one_process_serve_their_own_configs_at_once(tmp_path):
    """Each server builds its own app (tickets.app.create_app): two regions of one deployment, on the
    same moto, each on its own lane, started and used together."""
    tickets = {**TICKETS_CONFIG, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    config = write_cdk_json(tmp_path, tickets)
    on_moto = {"config_path": config, "backend": "moto"}
    with LocalServer(**on_moto, region="us-east-1") as east, LocalServer(**on_moto) as first:
        with LocalServer(**on_moto, region="eu-west-1") as west:
            assert call(east.url, "/orders?count=2").json()["tickets"] == [5000, 5002]
            assert call(west.url, "/orders?count=2").json()["tickets"] == [5001, 5003]
            assert call(first.url, "/orders").json()["ticket"] == 5004  # the first region's lane, as east's
        assert call(east.url, "/orders").json()["ticket"] == 5006  # west stopped; east goes on


@pytest.fixture
def moto_endpoint():
    """A DynamoDB-compatible endpoint on 127.0.0.1: moto in server mode."""
    from moto.server import ThreadedMotoServer

    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto_server.start()
    host, port = moto_server.get_host_and_port()
    yield f"http://{host}:{port}"
    moto_server.stop()


@pytest.mark.slow
def test_endpoint_table_is_reused_and_a_restart_continues(tmp_path, moto_endpoint):
    config = write_cdk_json(tmp_path)
    table = load_deployment(config, None).counter_table
    dynamodb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    dynamodb.create_table(**create_table_arguments(table, COUNTER_KEY))
    # A lane item as the service writes it (docs/explanation/design.md#items).
    lane = {COUNTER_KEY: {"S": "orders"}, "last": {"N": "5041"}, "step": {"N": "1"}, "first": {"N": "5000"}}
    dynamodb.put_item(TableName=table, Item=lane)
    created = dynamodb.describe_table(TableName=table)["Table"]["CreationDateTime"]

    with LocalServer(config_path=config, endpoint_url=moto_endpoint) as server:
        assert server.backend.endpoint_url == moto_endpoint
        assert [call(server.url, "/orders").json()["ticket"] for _ in range(2)] == [5042, 5043]
    with LocalServer(config_path=config, endpoint_url=moto_endpoint) as server:
        assert call(server.url, "/orders?count=2").json()["tickets"] == [5044, 5045]

    assert dynamodb.describe_table(TableName=table)["Table"]["CreationDateTime"] == created
    item = dynamodb.get_item(TableName=table, Key={COUNTER_KEY: {"S": "orders"}})["Item"]
    assert item["last"] == {"N": "5045"} and item["step"] == {"N": "1"}
    idempotency_table = load_deployment(config, None).idempotency_table
    assert idempotency_table in dynamodb.list_tables()["TableNames"]  # created, as it was missing
    ttl = dynamodb.describe_time_to_live(TableName=idempotency_table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expiration"


def _start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tickets_local", *args],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.slow
def test_command_prints_a_banner_answers_and_stops_on_sigterm(tmp_path):
    process = _start_cli("--port", "0", "--config", str(write_cdk_json(tmp_path)))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        banner, deadline = [], time.monotonic() + 60
        while not any(line.startswith("Ctrl-C") for line in banner):
            banner.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
        url = next(line.split()[1] for line in banner if line.strip().startswith("url:"))
        curl_line = next(line for line in banner if "curl -s" in line)
        assert curl_line.strip().endswith(f"curl -s {url}/orders")
        assert any(
            line.split() == ["backend:", "in", "memory", "(counters", "last", "until", "the", "server", "stops)"]
            for line in banner
        )
        assert any("us-east-1 (slot 0 of 1)" in line for line in banner)
        assert call(url, "/orders").json() == {"key": "orders", "ticket": 5000}
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    stderr = process.stderr.read()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert "GET /orders 200" in stderr  # one log line per request


def test_a_backend_is_named_once_and_an_endpoint_goes_with_the_endpoint_backend(tmp_path):
    config = write_cdk_json(tmp_path)
    assert isinstance(LocalServer(config_path=config).backend, MemoryBackend)  # the default
    assert isinstance(LocalServer(config_path=config, endpoint_url="http://127.0.0.1:1").backend, EndpointBackend)
    with pytest.raises(
        BackendError, match=r"the endpoint backend needs --endpoint-url \(make serve ENDPOINT_URL=...\)"
    ):
        LocalServer(config_path=config, backend="endpoint")
    with pytest.raises(BackendError, match="--endpoint-url names a DynamoDB for the endpoint backend, not 'moto'"):
        LocalServer(config_path=config, backend="moto", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(BackendError, match="no backend 'mongo': choose one of memory, moto, endpoint, dynamodb-local"):
        LocalServer(config_path=config, backend="mongo")


@pytest.mark.slow
def test_command_refuses_an_unconfigured_region_cleanly(tmp_path):
    process = _start_cli("--config", str(write_cdk_json(tmp_path)), "--region", "ap-south-1")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert err.startswith("error: region 'ap-south-1' is not in") and "us-east-1" in err
    assert "Traceback" not in err


def test_the_handlers_powertools_settings_come_from_the_server_not_from_import_order():
    """The server sets POWERTOOLS_* (service name, log level) before it builds the app; the handlers' Logger and
    Metrics read them when created, so importing the server must not create them (a refusal was logged at INFO
    with the service `service_undefined` when the API document's route table was imported first)."""
    probe = "import sys, tickets_local.server, tickets_local.__main__; print('tickets.runtime' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"


def test_a_reset_mark_moved_empties_the_tables_and_rebuilds_the_handler_before_the_next_invocation(tmp_path):
    """What the test kit's reset() asks of its server; a reset that fails is a 502, then tried again."""
    mark = ResetMark.create()
    try:
        with LocalServer(config_path=write_cdk_json(tmp_path), reset_mark=mark.path) as server:
            first = server.app
            assert [call(server.url, "/orders").json()["ticket"] for _ in range(2)] == [5000, 5001]
            assert server.app is first  # an unmoved mark resets nothing
            mark.bump()
            assert server.app is first  # nothing happens until the server serves something
            assert call(server.url, "/orders").json()["ticket"] == 5000
            assert server.app is not first
            empty, failed = server.backend.empty, []

            def fail_once(deployment):
                if not failed:
                    failed.append(deployment)
                    raise OSError("the tables could not be emptied")
                empty(deployment)

            server.backend.empty = fail_once
            mark.bump()
            assert call(server.url, "/orders").status == 502  # the reset failed: nothing served from the old tables
            assert call(server.url, "/orders").json()["ticket"] == 5000  # tried again, and done
    finally:
        mark.close(remove=True)
    assert not mark.path.exists()
