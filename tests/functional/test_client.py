"""The client over real HTTP: against the local server, and against scripted stub servers on
127.0.0.1 for retries, Retry-After, idempotency keys and SigV4 (checked offline, no AWS)."""

from __future__ import annotations

import datetime
import json
import os
import random
import re
import resource
import select
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from local_support import TICKETS_CONFIG, StubServer, expected_sigv4_signature, json_reply
from tickets import timing
from tickets_client import client as client_module
from tickets_client.client import Block, TicketsClient
from tickets_client.errors import TicketsError
from tickets_client.signing import Signer

REPO = Path(__file__).resolve().parents[2]
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEXAMPLETOKEN",
}
AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/us-east-1/lambda/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})"
)


@pytest.fixture(scope="module")
def local_url(tickets_servers):
    server = tickets_servers(TICKETS_CONFIG)
    server.reset()
    return server.url


def no_sleep(delays: list[float]):
    return delays.append


@pytest.mark.slow
class TestAgainstTheLocalServer:
    def test_next_and_state(self, local_url):
        client = TicketsClient(local_url)
        assert not client.signing
        assert client.next("orders") == [5000]
        assert client.next("orders", count=3) == [5001, 5002, 5003]
        assert client.next() == [1]  # the default key
        assert client.state("orders")["last"] == 5003

    def test_server_errors_carry_code_and_message(self, local_url):
        client = TicketsClient(local_url)
        with pytest.raises(TicketsError) as error:
            client.next("orders", count=1001)
        assert (error.value.status, error.value.code) == (400, "bad_request")
        assert "count" in error.value.message
        with pytest.raises(TicketsError) as error:
            client.state("never-used")
        assert (error.value.status, error.value.code) == (404, "not_found")

    def test_block_is_a_range_from_one_request(self, local_url):
        client = TicketsClient(local_url)
        assert client.block("blocks", 1_000_000) == Block(first=1, last=1_000_000, step=1, count=1_000_000)
        assert client.block("blocks", 3, idempotent=False).tickets == range(1_000_001, 1_000_004)
        assert client.next("blocks") == [1_000_004]
        with pytest.raises(TicketsError) as error:
            client.block("blocks", 1_000_001)
        assert (error.value.status, error.value.code) == (400, "bad_request")

    def test_cli_block(self, local_url):
        done = run_cli(["block", "cli-block", "--count", "1000000"], {**os.environ, "TICKETS_URL": local_url})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"first": 1, "last": 1_000_000, "step": 1, "count": 1_000_000}

    def test_cli_next_state_and_errors(self, local_url):
        env = {**os.environ, "TICKETS_URL": local_url}
        text = run_cli(["next", "invoices", "--count", "3", "--text"], env)
        assert (text.returncode, text.stdout) == (0, "1\n11\n21\n")
        answer = run_cli(["next", "invoices", "--url", local_url], {**os.environ, "TICKETS_URL": "http://x.invalid"})
        assert (answer.returncode, answer.stdout.strip()) == (0, '{"key": "invoices", "ticket": 31}')
        shown = run_cli(["state", "invoices"], env)
        assert shown.returncode == 0 and '"last": 31' in shown.stdout

        bad = run_cli(["next", "bad key!"], env)
        assert bad.returncode == 1 and bad.stdout == ""
        assert bad.stderr.startswith("error: bad_request: invalid key 'bad key!'")
        missing = run_cli(["state", "never-used"], env)
        assert missing.returncode == 1 and missing.stderr.startswith("error: not_found: ")
        for result in (bad, missing):
            assert "Traceback" not in result.stderr


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tickets_client", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def test_cli_reports_an_unreachable_server_cleanly():
    result = run_cli(["next", "orders", "--url", "http://127.0.0.1:9", "--max-attempts", "1"], dict(os.environ))
    assert result.returncode == 1
    assert result.stderr.startswith("error: unreachable: no answer from http://127.0.0.1:9")
    assert "Traceback" not in result.stderr


def test_cli_help_documents_the_options():
    result = run_cli(["next", "--help"], dict(os.environ))
    assert result.returncode == 0
    for option in ("--count", "--url", "--text", "--sign", "--region", "TICKETS_URL", "--max-attempts"):
        assert option in result.stdout
    words = " ".join(result.stdout.split())  # argparse wraps the help text
    retry, timeout = client_module.IN_PROGRESS_RETRY_SECONDS, client_module.FUNCTION_TIMEOUT_SECONDS
    assert "502 and 504" in words and f"in_progress is retried for up to {retry} s" in words
    overview = " ".join(run_cli(["--help"], dict(os.environ)).stdout.split())
    assert "lambda:InvokeFunctionUrl and lambda:InvokeFunction" in overview and f"{timeout} s timeout" in overview


class TestRetries:
    def test_503_is_retried_after_retry_after_with_the_same_idempotency_key(self):
        with StubServer(
            [
                json_reply(503, {"error": "unavailable", "message": "throttled"}, **{"Retry-After": "2"}),
                json_reply(200, {"key": "orders", "ticket": 7}),
            ]
        ) as stub:
            delays: list[float] = []
            client = TicketsClient(stub.url, sleep=no_sleep(delays))
            assert client.next("orders") == [7]
        first, second = stub.requests
        assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
        assert uuid.UUID(first.headers["idempotency-key"]).version == 4
        assert (first.method, first.path) == ("POST", "/orders")
        assert len(delays) == 1 and 2 <= delays[0] <= 2.1

    @pytest.mark.parametrize(
        "answer",
        [
            {"key": "k", "ticket": 1},
            {"key": "k", "first": 1, "last": 9, "step": 1, "count": 9},
            {"key": "k", "first": 1, "last": 10, "step": 1, "count": "10"},
            {"key": "k", "first": 1, "last": 10, "step": 0, "count": 10},
        ],
        ids=["a-ticket", "other-count", "count-as-text", "step-0"],
    )
    def test_a_block_answer_that_does_not_add_up_is_a_bad_response(self, answer):
        with StubServer([json_reply(200, answer)]) as stub, pytest.raises(TicketsError) as error:
            TicketsClient(stub.url).block("k", 10)
        assert error.value.code == "bad_response"
        assert (stub.requests[0].method, stub.requests[0].path) == ("POST", "/_blocks/k?count=10")

    def test_each_logical_request_gets_its_own_idempotency_key(self):
        with StubServer([json_reply(200, {"key": "orders", "ticket": 7})]) as stub:
            client = TicketsClient(stub.url)
            client.next("orders")
            client.next("orders")
        assert stub.requests[0].headers["idempotency-key"] != stub.requests[1].headers["idempotency-key"]

    def test_a_request_without_idempotency_sends_no_key_and_state_reads_never_do(self):
        with StubServer([json_reply(200, {"key": "orders", "ticket": 7})]) as stub:
            client = TicketsClient(stub.url)
            client.next("orders", idempotent=False)
            client.state("orders")
        assert [("idempotency-key" in r.headers) for r in stub.requests] == [False, False]

    def test_429_gives_up_after_max_attempts_with_capped_jittered_backoff(self):
        with StubServer([json_reply(429, {"error": "too_many_requests", "message": "slow down"})]) as stub:
            delays: list[float] = []
            client = TicketsClient(stub.url, max_attempts=4, sleep=no_sleep(delays))
            with pytest.raises(TicketsError) as error:
                client.next("orders", count=5)
        assert (error.value.status, error.value.code, error.value.message) == (429, "too_many_requests", "slow down")
        assert len(stub.requests) == 4 and len(delays) == 3
        assert all(0 <= delay <= 0.1 * 2**attempt for attempt, delay in enumerate(delays))
        assert {r.headers["idempotency-key"] for r in stub.requests} == {stub.requests[0].headers["idempotency-key"]}
        assert stub.requests[0].path == "/orders?count=5"

    def test_in_progress_duplicate_is_retried_until_the_first_answer(self):
        with StubServer(
            [
                json_reply(409, {"error": "in_progress", "message": "in flight"}),
                json_reply(200, {"key": "orders", "ticket": 9}),
            ]
        ) as stub:
            assert TicketsClient(stub.url, sleep=no_sleep([])).next("orders") == [9]

    def test_in_progress_is_retried_past_max_attempts_for_as_long_as_the_function_may_run(self, monkeypatch):
        """A first attempt that crashed holds its Idempotency-Key's lock until the function's timeout."""
        monkeypatch.setattr(client_module, "random", random.Random(3))  # the jitter, fixed for this test
        in_progress = json_reply(409, {"error": "in_progress", "message": "in flight"})
        with StubServer([in_progress] * 12 + [json_reply(200, {"key": "orders", "ticket": 9})]) as stub:
            delays: list[float] = []
            assert TicketsClient(stub.url, max_attempts=3, sleep=no_sleep(delays)).next("orders") == [9]
        assert len(stub.requests) == 13 and len({r.headers["idempotency-key"] for r in stub.requests}) == 1

    def test_in_progress_retries_cover_the_function_timeout_then_stop(self, monkeypatch):
        monkeypatch.setattr(client_module, "random", random.Random(4))
        with StubServer([json_reply(409, {"error": "in_progress", "message": "in flight"})]) as stub:
            delays: list[float] = []
            with pytest.raises(TicketsError) as error:
                TicketsClient(stub.url, sleep=no_sleep(delays)).next("orders")
        assert (error.value.status, error.value.code) == (409, "in_progress")
        assert (
            timing.FUNCTION_TIMEOUT_SECONDS
            <= sum(delays)
            <= client_module.IN_PROGRESS_RETRY_SECONDS + client_module.BACKOFF_CAP_SECONDS
        )
        assert len(stub.requests) == len(delays) + 1 <= client_module.IN_PROGRESS_MAX_ATTEMPTS

    def test_the_client_knows_the_function_timeout(self):
        assert client_module.FUNCTION_TIMEOUT_SECONDS == timing.FUNCTION_TIMEOUT_SECONDS
        assert client_module.IN_PROGRESS_RETRY_SECONDS > timing.FUNCTION_TIMEOUT_SECONDS

    @pytest.mark.parametrize("status", [502, 504])
    def test_a_gateway_error_is_retried_when_the_request_carries_an_idempotency_key(self, status):
        gateway = (status, {"Content-Type": "application/json"}, b'{"Message":"Internal Server Error"}')
        with StubServer([gateway, json_reply(200, {"key": "orders", "ticket": 7})]) as stub:
            delays: list[float] = []
            assert TicketsClient(stub.url, sleep=no_sleep(delays)).next("orders") == [7]
        first, second = stub.requests
        assert first.headers["idempotency-key"] == second.headers["idempotency-key"] and len(delays) == 1

    @pytest.mark.parametrize("status", [502, 504])
    def test_a_gateway_error_is_not_retried_without_an_idempotency_key(self, status):
        """The function may have issued the block; only the key makes a retry get that answer."""
        gateway = (status, {"Content-Type": "application/json"}, b'{"Message":"Internal Server Error"}')
        with StubServer([gateway]) as stub:  # every answer
            client = TicketsClient(stub.url, sleep=no_sleep([]))
            for call in (lambda: client.next("orders", idempotent=False), lambda: client.state("orders")):
                with pytest.raises(TicketsError) as error:
                    call()
                assert error.value.status == status
        assert len(stub.requests) == 2  # one each, no retry

    @pytest.mark.parametrize(
        "reply",
        [
            json_reply(400, {"error": "bad_request", "message": "bad key"}),
            json_reply(409, {"error": "exhausted", "message": "raise max"}),
            json_reply(500, {"error": "internal_error", "message": "bug"}),
        ],
    )
    def test_other_errors_are_not_retried(self, reply):
        with StubServer([reply]) as stub, pytest.raises(TicketsError) as error:
            TicketsClient(stub.url, sleep=no_sleep([])).next("orders")
        assert len(stub.requests) == 1
        assert (error.value.status, error.value.code) == (reply[0], json.loads(reply[2])["error"])

    def test_a_foreign_error_body_still_gives_a_clear_error(self):
        forbidden = (403, {"Content-Type": "application/json"}, b'{"Message":"Forbidden"}')
        with StubServer([forbidden]) as stub, pytest.raises(TicketsError) as error:
            TicketsClient(stub.url).next("orders")
        assert (error.value.status, error.value.code, error.value.message) == (403, "http_403", "Forbidden")

    def test_connection_refused_is_retried_then_reported(self):
        delays: list[float] = []
        client = TicketsClient("http://127.0.0.1:9", max_attempts=3, sleep=no_sleep(delays))
        with pytest.raises(TicketsError) as error:
            client.next("orders")
        assert (error.value.status, error.value.code) == (None, "unreachable")
        assert len(delays) == 2

    def test_an_idle_connection_the_server_closed_is_replaced_before_sending(self):
        """Not a failed attempt: the client sees the close before it sends (a connection dropped during
        an exchange is one: clients/conformance.json)."""
        with StubServer(
            [json_reply(200, {"key": "k", "ticket": 1}), json_reply(200, {"key": "k", "ticket": 2})],
            close_after_reply=True,
        ) as stub:
            delays: list[float] = []
            client = TicketsClient(stub.url, sleep=no_sleep(delays))
            assert client.next("k") == [1]
            [kept] = client._transport._idle  # the connection kept, idle
            idle = kept.sock
            assert select.select([idle], [], [], 10)[0]  # the server's close has reached the client
            assert client.next("k") == [2]
        assert stub.connections == 2 and len(stub.requests) == 2 and delays == []  # sent once, on a new connection

    def test_a_kept_connection_above_descriptor_1023_is_reused(self):
        """A process with many files open (a busy server): select() refuses descriptors above 1023, poll does not."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 1200:
            pytest.skip(f"needs 1,200 open files, the limit is {soft}")
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
        try:
            with StubServer(
                [json_reply(200, {"key": "k", "ticket": 1}), json_reply(200, {"key": "k", "ticket": 2})]
            ) as stub:
                client = TicketsClient(stub.url, sleep=no_sleep([]))
                assert client.next("k") == [1] and client._transport._idle[0].sock.fileno() > 1023
                assert client.next("k") == [2]
        finally:
            for descriptor in held:
                os.close(descriptor)
        assert stub.connections == 1  # the second request went on the kept connection

    def test_threads_sharing_one_client_each_send_on_a_connection_of_their_own(self):
        """A lease's prefetch and a worker's renewals share their client with the caller's own requests."""
        from concurrent.futures import ThreadPoolExecutor

        from tickets_local.server import LocalServer

        with LocalServer(config={"regions": {"us-east-1": 0}, "regionSlots": 1, "strictKeys": False}) as server:
            client = TicketsClient(server.url)
            with ThreadPoolExecutor(8) as pool:
                issued = [
                    ticket for tickets in pool.map(lambda _: client.next("shared"), range(200)) for ticket in tickets
                ]
        assert sorted(issued) == list(range(1, 201)) and 1 <= len(client._transport._idle) <= 8


class TestSigning:
    def test_function_urls_are_signed_and_others_not(self):
        signed = TicketsClient("https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws")
        assert signed.signing
        assert not TicketsClient("http://127.0.0.1:8000").signing
        assert not TicketsClient("https://tickets.example.com").signing
        with pytest.raises(ValueError, match="region"):
            TicketsClient("https://tickets.example.com", sign=True)

    def test_signed_request_verifies_offline(self, monkeypatch):
        for name, value in FAKE_CREDENTIALS.items():
            monkeypatch.setenv(name, value)
        with StubServer([json_reply(200, {"key": "orders", "ticket": 1, "tickets": [1, 2]})]) as stub:
            client = TicketsClient(stub.url, sign=True, region="us-east-1")
            assert client.next("orders", count=2) == [1, 2]
        received = stub.requests[0]
        match = AUTHORIZATION.fullmatch(received.headers["authorization"])
        assert match, received.headers["authorization"]
        date, signed_headers, signature = match.groups()
        assert re.fullmatch(r"\d{8}T\d{6}Z", received.headers["x-amz-date"])
        assert received.headers["x-amz-date"].startswith(date)
        assert received.headers["x-amz-security-token"] == FAKE_CREDENTIALS["AWS_SESSION_TOKEN"]
        assert {"host", "x-amz-date", "x-amz-security-token", "idempotency-key"} <= set(signed_headers.split(";"))
        secret = FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"]
        assert signature == expected_sigv4_signature(
            received.method, received.path, received.headers, received.body, secret
        )

    def test_signer_uses_botocore_with_fixed_credentials(self):
        from botocore.credentials import Credentials

        signer = Signer("us-east-1", Credentials("AKIDEXAMPLE", "secret"))  # no session token
        url = "https://abc123.lambda-url.us-east-1.on.aws/orders?count=2"
        headers = signer.headers("POST", url, {"Idempotency-Key": "k-1"}, b"")
        assert "X-Amz-Security-Token" not in headers
        received = {name.lower(): value for name, value in headers.items()}
        received["host"] = "abc123.lambda-url.us-east-1.on.aws"
        assert AUTHORIZATION.fullmatch(received["authorization"])
        assert datetime.datetime.strptime(received["x-amz-date"], "%Y%m%dT%H%M%SZ")
        signature = received["authorization"].rsplit("Signature=", 1)[1]
        assert signature == expected_sigv4_signature("POST", "/orders?count=2", received, b"", "secret")
        assert signature != expected_sigv4_signature("POST", "/orders?count=3", received, b"", "secret")

    def test_unsigned_requests_carry_no_authorization(self):
        with StubServer([json_reply(200, {"key": "orders", "ticket": 1})]) as stub:
            TicketsClient(stub.url).next("orders")
        assert "authorization" not in stub.requests[0].headers

    def test_missing_credentials_are_a_clear_error(self, monkeypatch, tmp_path):
        for name in (*FAKE_CREDENTIALS, "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        client = TicketsClient("http://127.0.0.1:9", sign=True, region="us-east-1")
        with pytest.raises(TicketsError) as error:
            client.next("orders")
        assert error.value.code == "no_credentials"
