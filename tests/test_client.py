"""The client over real HTTP: against the local server, and against scripted stub servers on
127.0.0.1 for retries, Retry-After, idempotency keys and SigV4 (checked offline, no AWS)."""

from __future__ import annotations

import datetime
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from local_support import StubServer, expected_sigv4_signature, json_reply, write_cdk_json
from tickets import timing
from tickets_client import client as client_module
from tickets_client.client import TicketsClient, TicketsError
from tickets_client.lease import TicketLease
from tickets_client.signing import Signer

REPO = Path(__file__).resolve().parent.parent
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEXAMPLETOKEN"}
AUTHORIZATION = re.compile(r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/us-east-1/lambda/aws4_request, "
                           r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})")


@pytest.fixture(scope="module")
def local_url(tmp_path_factory):
    from tickets_local.server import LocalServer

    with LocalServer(config_path=write_cdk_json(tmp_path_factory.mktemp("client"))) as server:
        yield server.url


class RecordingClient(TicketsClient):
    """Remembers every block the lease asked for."""

    def __init__(self, url: str):
        super().__init__(url)
        self.blocks: list[list[int]] = []
        self._blocks_lock = threading.Lock()

    def next(self, key=None, count=1, *, idempotent=True):
        assert not idempotent, "a lease accepts gaps and sends no Idempotency-Key"
        block = super().next(key, count, idempotent=idempotent)
        with self._blocks_lock:
            self.blocks.append(block)
        return block


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

    def test_lease_shared_by_eight_threads_hands_out_distinct_tickets(self, local_url):
        client = RecordingClient(local_url)
        lease = TicketLease(client, "leased", block_size=100, refill_at=0.5)
        threads, per_thread = 8, 250
        handed: list[list[int]] = [[] for _ in range(threads)]

        def take(index: int) -> None:
            for _ in range(per_thread):
                handed[index].append(lease.next())

        workers = [threading.Thread(target=take, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        lease.close()

        tickets = [t for batch in handed for t in batch]
        assert len(tickets) == threads * per_thread
        assert len(set(tickets)) == len(tickets), "a ticket was handed out twice"
        assert all(batch == sorted(batch) for batch in handed)  # each thread's tickets increase
        issued = [t for block in client.blocks for t in block]
        assert len(set(issued)) == len(issued)
        assert set(tickets) <= set(issued)
        # 2,000 tickets need 20 blocks; a prefetch started near the end may add one more.
        assert len(client.blocks) in (20, 21)
        assert TicketsClient(local_url).state("leased")["last"] == max(issued) == len(issued)

    def test_lease_prefetches_in_the_background(self, local_url):
        client = RecordingClient(local_url)
        with TicketLease(client, "prefetched", block_size=10, refill_at=0.3) as lease:
            assert [lease.next() for _ in range(6)] == [1, 2, 3, 4, 5, 6]
            assert len(client.blocks) == 1  # 4 of 10 left: above refill_at
            assert lease.next() == 7  # leaves 3 of 10: the next block is fetched now, in the background
            deadline = time.monotonic() + 30
            while len(client.blocks) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert client.blocks[1] == list(range(11, 21))
            assert [lease.next() for _ in range(4)] == [8, 9, 10, 11]

    def test_closed_lease_refuses(self, local_url):
        lease = TicketLease(TicketsClient(local_url), "closed", block_size=5)
        assert lease.next() == 1
        lease.close()
        with pytest.raises(RuntimeError, match="closed"):
            lease.next()

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
    return subprocess.run([sys.executable, "-m", "tickets_client", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


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
    assert "502 and 504" in words and "in_progress is retried for up to 45 s" in words
    overview = " ".join(run_cli(["--help"], dict(os.environ)).stdout.split())
    assert "lambda:InvokeFunctionUrl and lambda:InvokeFunction" in overview and "40 s timeout" in overview


class TestRetries:
    def test_503_is_retried_after_retry_after_with_the_same_idempotency_key(self):
        with StubServer([json_reply(503, {"error": "unavailable", "message": "throttled"}, **{"Retry-After": "2"}),
                         json_reply(200, {"key": "orders", "ticket": 7})]) as stub:
            delays: list[float] = []
            client = TicketsClient(stub.url, sleep=no_sleep(delays))
            assert client.next("orders") == [7]
        first, second = stub.requests
        assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
        assert uuid.UUID(first.headers["idempotency-key"]).version == 4
        assert (first.method, first.path) == ("POST", "/orders")
        assert len(delays) == 1 and 2 <= delays[0] <= 2.1

    def test_each_logical_request_gets_its_own_idempotency_key(self):
        with StubServer([json_reply(200, {"key": "orders", "ticket": 7})]) as stub:
            client = TicketsClient(stub.url)
            client.next("orders")
            client.next("orders")
        assert stub.requests[0].headers["idempotency-key"] != stub.requests[1].headers["idempotency-key"]

    def test_a_request_without_idempotency_sends_no_key_and_state_reads_never_do(self):
        with StubServer([json_reply(200, {"key": "orders", "ticket": 7})]) as stub:
            client = TicketsClient(stub.url)
            client.next("orders", count=5, idempotent=False)
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
        assert all(0 <= delay <= 0.1 * 2 ** attempt for attempt, delay in enumerate(delays))
        assert {r.headers["idempotency-key"] for r in stub.requests} == {stub.requests[0].headers["idempotency-key"]}
        assert stub.requests[0].path == "/orders?count=5"

    def test_in_progress_duplicate_is_retried_until_the_first_answer(self):
        with StubServer([json_reply(409, {"error": "in_progress", "message": "in flight"}),
                         json_reply(200, {"key": "orders", "ticket": 9})]) as stub:
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
        assert timing.FUNCTION_TIMEOUT_SECONDS <= sum(delays) <= client_module.IN_PROGRESS_RETRY_SECONDS + \
            client_module.BACKOFF_CAP_SECONDS
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

    @pytest.mark.parametrize("reply", [json_reply(400, {"error": "bad_request", "message": "bad key"}),
                                       json_reply(409, {"error": "exhausted", "message": "raise max"}),
                                       json_reply(500, {"error": "internal_error", "message": "bug"})])
    def test_other_errors_are_not_retried(self, reply):
        with StubServer([reply]) as stub:
            with pytest.raises(TicketsError) as error:
                TicketsClient(stub.url, sleep=no_sleep([])).next("orders")
        assert len(stub.requests) == 1
        assert (error.value.status, error.value.code) == (reply[0], json.loads(reply[2])["error"])

    def test_a_foreign_error_body_still_gives_a_clear_error(self):
        with StubServer([(403, {"Content-Type": "application/json"}, b'{"Message":"Forbidden"}')]) as stub:
            with pytest.raises(TicketsError) as error:
                TicketsClient(stub.url).next("orders")
        assert (error.value.status, error.value.code, error.value.message) == (403, "http_403", "Forbidden")

    def test_connection_refused_is_retried_then_reported(self):
        delays: list[float] = []
        client = TicketsClient("http://127.0.0.1:9", max_attempts=3, sleep=no_sleep(delays))
        with pytest.raises(TicketsError) as error:
            client.next("orders")
        assert (error.value.status, error.value.code) == (None, "unreachable")
        assert len(delays) == 2

    def test_a_dropped_keep_alive_connection_is_reopened(self):
        with StubServer([json_reply(200, {"key": "k", "ticket": 1}), json_reply(200, {"key": "k", "ticket": 2})],
                        close_after_reply=True) as stub:
            delays: list[float] = []
            client = TicketsClient(stub.url, sleep=no_sleep(delays))
            assert client.next("k") + client.next("k") == [1, 2]
        assert stub.connections == 2 and delays == []  # resent at once on a new connection


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
        assert signature == expected_sigv4_signature(received.method, received.path, received.headers,
                                                     received.body, secret)

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


class FlakyClient:
    """Stands in for TicketsClient: blocks of consecutive tickets, the second fetch fails."""

    def __init__(self):
        self.calls = 0
        self.next_ticket = 1

    def next(self, key, count, *, idempotent=True):
        self.calls += 1
        if self.calls == 2:
            raise TicketsError(503, "unavailable", "try later")
        block = list(range(self.next_ticket, self.next_ticket + count))
        self.next_ticket += count
        return block


def test_a_failed_prefetch_surfaces_when_its_block_is_needed_then_recovers():
    client = FlakyClient()
    lease = TicketLease(client, "k", block_size=4, refill_at=0.5)
    assert [lease.next() for _ in range(4)] == [1, 2, 3, 4]  # the prefetch ran (and failed) meanwhile
    with pytest.raises(TicketsError, match="unavailable"):
        lease.next()
    assert lease.next() == 5  # fetched afresh
    lease.close()


@pytest.mark.parametrize("arguments", [{"block_size": 0}, {"block_size": 1001}, {"refill_at": 1.5}])
def test_lease_rejects_impossible_settings(arguments):
    with pytest.raises(ValueError):
        TicketLease(FlakyClient(), "k", **arguments)
