"""Error messages quote what the caller sent one way, errors.echo's, wherever the refusal is made: a
count is quoted as its text whether it came in the query or the body (JSON `true` as 'true', not
Python's True), refused by the count rule (keys.py, protocol.py) or by a key's maxBlock (issuer.py)."""

from __future__ import annotations

import pytest

from common import EXAMPLE_CONFIG

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)

SMALL_BLOCKS = {**EXAMPLE_CONFIG, "counters": {**EXAMPLE_CONFIG["counters"], "small": {"maxBlock": 100}}}


@pytest.mark.parametrize(
    "path, query, body, message",
    [
        ("/orders", {"count": "0"}, None, "invalid count '0': count is a whole number from 1 to 1000"),
        ("/orders", {"count": "1001"}, None, "invalid count '1001': "),
        ("/orders", None, '{"count": 0}', "invalid count '0': "),
        ("/orders", None, '{"count": true}', "the body's count must be a JSON integer from 1 to 1000, got 'true'"),
        ("/orders", None, '{"count": "x"}', "the body's count must be a JSON integer from 1 to 1000, got 'x'"),
        ("/_blocks/small", {"count": "101"}, None, "invalid count '101': a block of 'small' holds at most 100 tickets"),
        ("/_blocks/small", None, '{"count": 101}', "invalid count '101': a block of 'small' holds at most 100"),
    ],
)
def test_a_refused_count_is_quoted_as_sent_wherever_it_is_refused(deploy, path, query, body, message):
    api = deploy(SMALL_BLOCKS)
    answer = api.post(path, query=query, body=body, headers={"content-type": "application/json"})
    assert answer.status == 400, answer
    assert answer.body["message"].startswith(message), answer.body
