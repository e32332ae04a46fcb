"""Both clients send their JSON bodies as UTF-8, non-ASCII unescaped: the longest ref and void reason
docs/reference/series.md allows, in 4-byte characters, go through each client to the local server over real HTTP
(escaped, one such character takes 12 bytes and the reason would pass the server's body limit)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tickets.series.journal import MAX_REASON_CHARS, MAX_REF_CHARS
from tickets.series.routes import MAX_BODY_BYTES
from tickets_client.client import TicketsClient, json_body

REPO = Path(__file__).resolve().parents[2]
WIDE = "\U00020000"  # CJK Extension B: 4 bytes in UTF-8, a surrogate pair (12 bytes) escaped in JSON
CONFIG = {"regions": {"us-east-1": 0}, "regionSlots": 1, "series": {"wide": {"start": 1}}}


def test_the_longest_reason_fits_the_body_limit_only_unescaped():
    fields = {"series": "all", "ticket": 1, "reason": WIDE * MAX_REASON_CHARS}
    assert len(json.dumps(fields).encode()) > MAX_BODY_BYTES  # what the client sent before
    assert len(json_body(fields)) < MAX_BODY_BYTES
    assert json_body(fields).decode("utf-8") == json.dumps(fields, ensure_ascii=False)


def test_text_that_is_not_unicode_is_refused_before_sending():
    with pytest.raises(ValueError, match="lone surrogate"):
        json_body({"ref": "\ud800"})


@pytest.mark.slow
def test_the_python_client_sends_the_longest_ref_and_reason_in_4_byte_characters(tickets_servers):
    server = tickets_servers(CONFIG)
    server.reset()
    client = TicketsClient(server.url)
    number = client.series("wide", ref=WIDE * MAX_REF_CHARS)
    voided = client.void("wide", number.series, number.ticket, WIDE * MAX_REASON_CHARS)
    assert voided["voided"]["reason"] == WIDE * MAX_REASON_CHARS
    [entry] = client.journal("wide", number.series)
    assert entry["ref"] == WIDE * MAX_REF_CHARS


def test_the_typescript_test_sends_the_documented_limits():
    """The TypeScript client's test (clients/typescript/test/client.test.ts) sends the same limits."""
    source = (REPO / "clients" / "typescript" / "test" / "client.test.ts").read_text()
    limits = dict(re.findall(r"const (MAX_REF_CHARS|MAX_REASON_CHARS) = (\d+);", source))
    assert limits == {"MAX_REF_CHARS": str(MAX_REF_CHARS), "MAX_REASON_CHARS": str(MAX_REASON_CHARS)}
    assert '"\\u{20000}"' in source
