"""HTTP rules without HTTP: content negotiation, merging path/query/body, counts, bodies."""

from __future__ import annotations

import base64
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common import BROWSER_ACCEPT
from tickets.errors import ECHO_CHARS, BadRequest, PayloadTooLarge, echo
from tickets.keys import MAX_BLOCK, MAX_COUNT, parse_count, require_idempotency_key, require_key
from tickets.protocol import (
    BLOCKS_ROUTE,
    MAX_BODY_BYTES,
    Asked,
    decode_path_key,
    merged_request,
    normalise_path,
    prefers_text,
    render_text,
    request_body,
    state_request,
    ticket_request,
)


@pytest.mark.parametrize(
    "accept, text",
    [
        (None, False),
        ("", False),
        ("*/*", False),
        (BROWSER_ACCEPT, False),
        ("application/json", False),
        ("text/plain", True),
        ("text/plain; charset=utf-8", True),
        ("TEXT/PLAIN", True),
        ("text/*", True),
        ("text/plain, application/json", False),  # equal preference: JSON
        ("text/plain, application/json;q=0.5", True),
        ("application/json;q=0.9, text/plain", True),
        ("text/plain;q=0.5, application/json", False),
        ("text/plain;q=0.5, */*;q=0.1", True),
        ("text/plain;q=0, */*", False),
        ("text/plain;q=bogus, application/json;q=0.1", False),  # an unreadable q counts as 0
        ("text/html", False),  # neither is acceptable: JSON, the API's native type
    ],
)
def test_prefers_text(accept, text):
    assert prefers_text(accept) is text


def test_render_text_is_one_ticket_a_line():
    assert render_text([7]) == "7\n"
    assert render_text([7, 8, 9]) == "7\n8\n9\n"


@pytest.mark.parametrize(
    "path_key, query, body, expected",
    [
        (None, None, b"", Asked("default", 1, named=False)),
        (None, "", b"", Asked("default", 1, named=False)),
        ("orders", None, b"", Asked("orders", 1)),
        (None, "key=orders", b"", Asked("orders", 1)),
        (None, "systemKey=orders", b"", Asked("orders", 1)),
        (None, None, b'{"key": "orders", "count": 3}', Asked("orders", 3)),
        (
            "orders",
            "key=orders&systemKey=orders&count=5",
            b'{"key": "orders", "count": 5}',
            Asked("orders", 5),
        ),  # repeating the same thing everywhere is fine
        ("a%3Ab", None, b"", Asked("a:b", 1)),  # the path is still percent-encoded
        (None, "key=a%3Ab", b"", Asked("a:b", 1)),  # and so is the raw query string
        (None, "count=1000", b"", Asked("default", 1000, named=False)),
        (None, "count=2&&key=orders", b"", Asked("orders", 2)),  # an empty pair is nothing
        (None, None, b"  \n", Asked("default", 1, named=False)),  # a blank body is no body
    ],
)
def test_ticket_request_merges_path_query_and_body(path_key, query, body, expected):
    assert ticket_request(path_key, query, body, "default") == expected


def _answer(request, *arguments):
    try:
        return request(*arguments)
    except BadRequest as err:
        return type(err), err.message


# Path segments as a Function URL passes them: keys, percent-encoded text (valid or not), long ones.
_SEGMENTS = st.one_of(
    st.none(),
    st.from_regex(r"[A-Za-z0-9_.:~%-]{1,300}", fullmatch=True),
    st.text(max_size=20),
    st.sampled_from(["orders", "a%3Ab", "%FF", "_x", "a" * 256, "a" * 257, "%E2%82%AC"]),
)


@given(path_key=_SEGMENTS, query=st.sampled_from([None, ""]), body=st.sampled_from([b"", b" ", b"\n\t "]))
def test_a_request_with_no_query_nor_body_takes_the_shortcut_to_the_same_answer(path_key, query, body):
    """ticket_request answers `GET /orders` without its general merge (the warm path's cost,
    bench/README.md): the answer, or the refusal, is the merge's."""
    arguments = (path_key, query, body, "default")
    assert _answer(ticket_request, *arguments) == _answer(merged_request, *arguments)


@pytest.mark.parametrize(
    "path_key, query, body, complaint",
    [
        ("orders", "key=invoices", b"", "different keys"),
        (None, "key=orders&systemKey=invoices", b"", "different keys"),
        ("orders", None, b'{"key": "invoices"}', "different keys"),
        (None, "count=2", b'{"count": 3}', "different counts"),
        (None, "limit=2", b"", "unknown query parameter"),
        (None, "count", b"", "invalid count ''"),
        (None, None, b'{"amount": 2}', "unknown body field"),
        (None, None, b'{"key": 5}', "key must be a string"),
        (None, None, b"[1, 2]", "JSON object"),
        (None, None, b"count=2", "JSON object"),
        (None, None, b"\xff\xfe", "JSON object"),
        (None, None, b"[" * 100_000, "JSON object"),  # deeper than the parser's recursion limit
        (None, None, b'{"count": 2, "count": 3}', "repeats the field 'count'"),
        (None, None, b'{"count": {"a": 1, "a": 1}}', "repeats the field 'a'"),
        (None, "key=", b"", "invalid key"),
        (None, "key=a,b", b"", "invalid key"),
        (None, "key=a&key=b", b"", "key was repeated"),
        (None, "count=1&count=2", b"", "count was repeated"),
        (None, "count=2&count=2", b"", "count was repeated"),
        (None, "systemKey=a&systemKey=a", b"", "systemKey was repeated"),
        (None, "key=%FF", b"", "UTF-8"),
    ],
)
def test_ticket_request_refuses(path_key, query, body, complaint):
    with pytest.raises(BadRequest, match=re.escape(complaint)):
        ticket_request(path_key, query, body, "default")


@pytest.mark.parametrize("query, body", [(None, b""), ("count=3", b""), (None, b'{"count": 3}')])
def test_a_requests_route_bounds_its_count_and_only_a_blocks_is_recorded(query, body):
    """Idempotency-Key records stored before range blocks existed say {key, count}: a ticket request's still does."""
    tickets, block = (ticket_request("orders", query, body, "default", route) for route in ("tickets", BLOCKS_ROUTE))
    assert (tickets.route, tickets.recorded) == ("tickets", {"key": "orders", "count": tickets.count})
    assert (block.route, block.recorded) == ("blocks", {"key": "orders", "count": block.count, "route": "blocks"})
    big = f"count={MAX_COUNT + 1}"
    with pytest.raises(BadRequest, match=f"from 1 to {MAX_COUNT}"):
        ticket_request("orders", big, b"", "default")
    assert ticket_request("orders", big, b"", "default", BLOCKS_ROUTE).count == MAX_COUNT + 1
    with pytest.raises(BadRequest, match=f"from 1 to {MAX_BLOCK}"):
        ticket_request("orders", f"count={MAX_BLOCK + 1}", b"", "default", BLOCKS_ROUTE)


@pytest.mark.parametrize(
    "query, body", [("x=1", None), ("key=orders", None), ("count", None), (None, "{}"), (None, " ")]
)
def test_state_request_takes_nothing_but_the_key(query, body):
    with pytest.raises(BadRequest, match="_counters"):
        state_request("orders", query, body)
    assert state_request("orders", "", "") == state_request("orders", None, None) == "orders"


@pytest.mark.parametrize("value", ["x" * 6000, "\x00" * 3000, 10**3000, ["x" * 10] * 1000])
def test_echo_keeps_a_message_short_and_says_how_long_the_input_was(value):
    echoed = echo(value)
    assert len(echoed) < ECHO_CHARS + 40
    length = len(value) if isinstance(value, str) else len(repr(value))  # a string's own length: no quotes
    assert echoed.startswith(repr(value)[:ECHO_CHARS]) and f"({length} characters)" in echoed


def test_a_101_character_key_is_reported_as_101_characters():
    with pytest.raises(BadRequest) as refused:
        require_key("k" * 101)
    assert "(101 characters)" in refused.value.message and "103" not in refused.value.message


def test_echo_repeats_short_input_whole():
    assert echo("orders") == "'orders'" and echo(7) == "7"


@pytest.mark.parametrize(
    "raw, count",
    [
        ("1", 1),
        ("1000", 1000),
        ("01", 1),
        (1, 1),
        (1000, 1000),
        ("0999", 999),
    ],
)
def test_parse_count_accepts_whole_numbers_from_1_to_1000(raw, count):
    assert parse_count(raw) == count


@pytest.mark.parametrize(
    "raw",
    [
        "0",
        "1001",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.0",
        "1e3",
        "abc",
        "",
        "١",
        "²",
        "99999",
        0,
        1001,
        -1,
        1.0,
        True,
        None,
        [1],
        10**30,
    ],
)
def test_parse_count_refuses_everything_else(raw):
    with pytest.raises(BadRequest, match=f"1 to {MAX_COUNT}"):
        parse_count(raw)


@pytest.mark.parametrize("key", ["a", "A9", "orders", "a.b_c:d-e", "0", "x" * 100])
def test_valid_keys(key):
    assert require_key(key) == key


@pytest.mark.parametrize(
    "key",
    [
        "",
        "x" * 101,
        "_orders",
        ".orders",
        "-x",
        ":x",
        "a/b",
        "a b",
        "a#1",
        "a%2Fb",
        "é",
        "a\x00",
        "a\n",
    ],
)
def test_invalid_keys(key):
    with pytest.raises(BadRequest, match="invalid key"):
        require_key(key)


@pytest.mark.parametrize(
    "segment, complaint",
    [
        ("a%2Fb", "invalid key"),
        ("%252F", "invalid key"),
        ("%00", "invalid key"),
        ("..", "invalid key"),
        ("%FF", "UTF-8"),
        ("%C3", "UTF-8"),
        ("a" * 300, "longer than"),
    ],
)
def test_decode_path_key_refuses_encoded_tricks(segment, complaint):
    with pytest.raises(BadRequest, match=complaint):
        decode_path_key(segment)


def test_decode_path_key_decodes_once():
    assert decode_path_key("a%2Db") == "a-b"


@pytest.mark.parametrize(
    "path, normal",
    [("/", "/"), ("//", "/"), ("/orders/", "/orders"), ("/_counters/x/", "/_counters/x"), ("/orders", "/orders")],
)
def test_normalise_path_drops_trailing_slashes(path, normal):
    assert normalise_path(path) == normal


def test_request_body_plain_and_base64():
    payload = json.dumps({"count": 2})
    assert request_body(None, False) == b""
    assert request_body("", True) == b""
    assert request_body(payload, False) == payload.encode()
    assert request_body(base64.b64encode(payload.encode()).decode(), True) == payload.encode()


def test_request_body_limits():
    assert len(request_body("x" * MAX_BODY_BYTES, False)) == MAX_BODY_BYTES
    assert len(request_body(base64.b64encode(b"x" * MAX_BODY_BYTES).decode(), True)) == MAX_BODY_BYTES
    for raw, is_base64 in [
        ("x" * (MAX_BODY_BYTES + 1), False),
        ("é" * (MAX_BODY_BYTES // 2 + 1), False),
        (base64.b64encode(b"x" * (MAX_BODY_BYTES + 1)).decode(), True),
        ("x" * 10**6, False),
    ]:
        with pytest.raises(PayloadTooLarge):
            request_body(raw, is_base64)


@pytest.mark.parametrize("raw", ["not base64!", "abc", "YWJj\n===="])
def test_request_body_refuses_broken_base64(raw):
    with pytest.raises(BadRequest, match="base64"):
        request_body(raw, True)


@pytest.mark.parametrize("value", ["k", "x" * 128, "retry-2024-01-01T00:00:00Z order#5", " ~"])
def test_idempotency_key_accepts_printable_ascii(value):
    assert require_idempotency_key(value) == value


@pytest.mark.parametrize("value", ["", "x" * 129, "é", "tab\there", "nul\x00", "line\n"])
def test_idempotency_key_refuses_the_rest(value):
    with pytest.raises(BadRequest, match="Idempotency-Key"):
        require_idempotency_key(value)
