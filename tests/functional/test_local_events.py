"""The local server passes a request body to the handler as a Function URL does, by its Content-Type
(docs/reference/local-server.md): as text for text types and JSON, base64 for every other type and for none."""

from __future__ import annotations

import base64

import pytest

from local_support import call, write_cdk_json
from tickets_local import server as server_module
from tickets_local.events import HttpRequest, function_url_event

FORM = b"key=orders&count=2"


def event_for(body: bytes, content_type: str | None) -> dict:
    headers = [("Host", "127.0.0.1:8000")] + ([("Content-Type", content_type)] if content_type is not None else [])
    request = HttpRequest("POST", "/orders", "HTTP/1.1", headers, body, "127.0.0.1", 8000)
    return function_url_event(request, now=0)


@pytest.mark.parametrize(
    "content_type, body",
    [
        (None, b'{"count": 2}'),  # no type: curl --data-binary without -H, http.client
        ("application/x-www-form-urlencoded", FORM),  # curl -d's default
        ("application/octet-stream", b'{"count": 2}'),
        ("image/png", b"\x89PNG\r\n\x1a\n"),
        ("application/xml", b"<count>2</count>"),
        ("multipart/form-data; boundary=x", b"--x--"),
        ("application/problem+json", b'{"count": 2}'),  # JSON by its suffix, but not application/json
        ("text/plain", b"\xff\xfe not UTF-8"),  # a text type, but no text: base64 all the same
    ],
)
def test_bodies_arrive_base64_encoded_unless_text_or_json(content_type, body):
    event = event_for(body, content_type)
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == body


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
        "text/plain",
        "text/plain; charset=utf-8",
        "text/csv",
    ],
)
def test_text_and_json_bodies_arrive_as_text(content_type):
    event = event_for('{"count": 2, "note": "é"}'.encode(), content_type)
    assert (event["isBase64Encoded"], event["body"]) == (False, '{"count": 2, "note": "é"}')


def test_no_body_is_no_body():
    event = event_for(b"", "application/json")
    assert "body" not in event and event["isBase64Encoded"] is False


@pytest.mark.slow
def test_over_http_the_handler_gets_each_kind_and_answers_alike(tmp_path, monkeypatch):
    """The same JSON body sent with no type, as a form (curl -d) and as JSON: the handler receives it
    encoded as AWS would send it, decodes it, and issues for each."""
    from tickets_local.server import LocalServer

    events: list[dict] = []
    original = server_module.LocalServer.invoke
    monkeypatch.setattr(
        server_module.LocalServer, "invoke", lambda self, event: events.append(event) or original(self, event)
    )
    kinds = [None, "application/x-www-form-urlencoded", "application/octet-stream", "application/json"]
    with LocalServer(config_path=write_cdk_json(tmp_path)) as server:
        answers = [
            call(server.url, "/", method="POST", body=b'{"key": "orders", "count": 2}', headers=headers)
            for headers in ({"Content-Type": kind} if kind else {} for kind in kinds)
        ]
    assert [answer.status for answer in answers] == [200] * len(kinds)
    assert [answer.json()["tickets"] for answer in answers] == [[5000, 5001], [5002, 5003], [5004, 5005], [5006, 5007]]
    assert [event["isBase64Encoded"] for event in events] == [True, True, True, False]
