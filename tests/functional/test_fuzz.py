"""Hostile input through the local server over real HTTP: every answer is a 4xx JSON error or a
valid ticket, never a 5xx, and a refused request leaves every counter unchanged."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from local_support import raw_exchange, write_cdk_json
from tickets_local.server import LocalServer

CONFIG = {
    "regions": {"us-east-1": 0},
    "counters": {"orders": {"start": 5000}, "invoices": {"stride": 10}, "hot": {"shards": 3}},
}
FUZZ_EXAMPLES = 400
ISSUED: dict[str, set[int]] = {}  # key -> every ticket the fuzzing was handed


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = write_cdk_json(tmp_path_factory.mktemp("fuzz"), CONFIG)
    with LocalServer(config_path=config, port=0) as running:
        yield running


def counters(server: LocalServer) -> list[dict]:
    """Every item of the counter table: a refused request must change none, whatever key it named.
    (The server is in this process, and idle between requests: its own client's scan is safe.)"""
    assert server.app is not None
    items = server.app.dynamodb.scan(TableName=server.deployment.counter_table, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: item["counter"]["S"])


def test_counters_read_through_the_api_match_the_table(server):
    for key in ("orders", "hot"):
        raw_exchange(server, f"POST /{key}?count=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        status, _, body = raw_exchange(
            server, f"GET /_counters/{key} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        )
        lanes = {lane["counter"]: lane["last"] for lane in json.loads(body)["lanes"] if lane["last"] is not None}
        stored = {item["counter"]["S"]: int(item["last"]["N"]) for item in counters(server) if "last" in item}
        assert status == 200 and lanes and all(stored[counter] == last for counter, last in lanes.items())


segments = st.one_of(
    st.sampled_from(
        [
            "",
            "orders",
            "invoices",
            "hot",
            "default",
            "_counters",
            "_counters/orders",
            "orders/",
            "..",
            "%2e%2e",
            "orders%2F..",
            "%00",
            "%FF",
            "%252F",
            "a" * 101,
            "-x",
            "_x",
            "ord ers",
            "orders%20",
            "%F0%9F%8E%9F",
            "orders;x",
            "\u00e9",
        ]
    ),
    st.text(alphabet=st.characters(codec="latin-1", exclude_characters="\r\n #?"), max_size=40),
)
query_values = st.one_of(
    st.sampled_from(
        [
            "1",
            "0",
            "1000",
            "1001",
            "-1",
            "1.5",
            "1e3",
            " 1",
            "01",
            "",
            "%FF",
            "%00",
            "2,3",
            "9" * 400,
            "orders",
            "x" * 3000,
        ]
    ),
    st.text(alphabet=st.characters(codec="latin-1", exclude_characters="\r\n #&"), max_size=30),
)
queries = st.lists(
    st.tuples(st.sampled_from(["count", "key", "systemKey", "Count", "", "x", "count[]"]), query_values), max_size=4
)
bodies = st.one_of(
    st.just(b""),
    st.sampled_from(
        [
            b'{"count": 2}',
            b'{"count": 1001}',
            b'{"key": "orders"}',
            b'{"key": 5}',
            b"[]",
            b"null",
            b'{"count": true}',
            b'{"count": 2.0}',
            b"{" * 5000,
            b"\xff\xfe\x00",
            b'{"key": "orders", "count": 3, "x": 1}',
            b"A" * 70_000,
        ]
    ),
    st.binary(max_size=2048),
)
headers = st.lists(
    st.tuples(
        st.sampled_from(["Accept", "Idempotency-Key", "Content-Type", "X-Fuzz", "Cookie", "Content-Encoding"]),
        st.text(alphabet=st.characters(codec="latin-1", exclude_characters="\r\n\x00"), max_size=200),
    ),
    max_size=3,
)
methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "FOO", "get"])


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=methods, path=st.lists(segments, min_size=1, max_size=3), query=queries, body=bodies, extra_headers=headers
)
def test_hostile_requests_get_a_4xx_json_error_or_a_valid_ticket(server, method, path, query, body, extra_headers):
    before = counters(server)
    target = "/" + "/".join(path)
    if query:
        target += "?" + "&".join(f"{name}={value}" for name, value in query)
    head = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", f"Content-Length: {len(body)}"] + [
        f"{name}: {value}" for name, value in extra_headers
    ]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body

    status, response_headers, payload = raw_exchange(server, request)

    assert status < 500, (status, payload[:300], request[:300])
    assert response_headers.get("cache-control") == "no-store", (status, response_headers)
    if method == "HEAD":
        return
    if status == 200:
        if response_headers["content-type"].startswith("text/plain"):
            key, tickets = None, [int(line) for line in payload.decode().splitlines()]
        else:
            answer = json.loads(payload)
            key = answer["key"]
            tickets = answer.get("tickets", [answer.get("ticket")]) if "ticket" in answer else None
        if tickets is not None:  # a /_counters answer carries state, not tickets
            assert tickets and all(isinstance(t, int) and t >= 1 for t in tickets), payload
            assert tickets == sorted(set(tickets)), payload
            if key is not None:  # every ticket of a key, over the whole run, is new and on its lane
                counter = CONFIG["counters"].get(key, {})
                start, stride = counter.get("start", 1), counter.get("stride", 1)
                assert all(t >= start and (t - start) % stride == 0 for t in tickets), (key, tickets)
                assert not ISSUED.setdefault(key, set()) & set(tickets), (key, tickets)
                ISSUED[key] |= set(tickets)
        return
    error = json.loads(payload)
    assert set(error) == {"error", "message"} and isinstance(error["message"], str) and error["message"], error
    assert counters(server) == before, (status, error, request[:300])
