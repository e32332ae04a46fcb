"""The example answers of the README and of the tutorial are the local server's: each `$ curl` line of their
console blocks is sent, as curl would send it, to `python -m tickets_local` (what `make serve` runs; the test
kit's LocalTickets starts it) serving the config the page says, in the page's order, and the answer must be the
line the page prints under it."""

from __future__ import annotations

import json
import re
import shlex
from urllib.parse import urlsplit

import pytest
from docs_text import DOCS, README, REPO, console_examples, request_of

from local_support import call
from tickets_local.testing import LocalTickets

MAKE_SERVE_URL = "http://127.0.0.1:8000"  # where `make serve` listens, as the pages write it
SHIPPED = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]["tickets"]


def answers(servers: dict[int, LocalTickets], examples: list[tuple[list[str], str]]) -> list[tuple[str, str]]:
    """(what the page shows, what the server answered) for each example, sent to the server of its URL's port."""
    pairs = []
    for command, shown in examples:
        method, url, headers, status_only = request_of(command)
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        reply = call(servers[parts.port].url, path, method=method, headers=headers)
        answered = str(reply.status) if status_only else reply.body.decode().removesuffix("\n")
        assert status_only or reply.status < 300, (shlex.join(command), reply.status, reply.body)
        pairs.append((shown, answered))
    return pairs


def test_console_examples_are_read_as_written():
    text = "```console\n$ make serve\n$ curl -s -H 'Accept: text/plain' http://127.0.0.1:8000/x  # a comment\n1\n"
    text += "$ curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8000/y\n404\n```\n"
    [(first, one), (second, status)] = console_examples(text)
    assert request_of(first) == ("GET", f"{MAKE_SERVE_URL}/x", {"Accept": "text/plain"}, False) and one == "1"
    assert request_of(second) == ("GET", f"{MAKE_SERVE_URL}/y", {}, True) and status == "404"


def test_the_readme_s_answers_are_the_local_server_s():
    """On the repository's cdk.json, a fresh server: the same answers, byte for byte (a `text/plain` answer less
    its final newline, which the console shows as the line's end)."""
    examples = console_examples(README.read_text(encoding="utf-8"))
    assert len(examples) >= 4 and all(shown for _, shown in examples), examples
    with LocalTickets(SHIPPED) as server:
        for shown, answered in answers({8000: server}, examples):
            assert answered == shown


# The tutorial's cdk.json, section by section: its edits of the shipped one (regionSlots 2 in section 2, the
# counter parcels in section 3, eu-west-1 on slot 1 in section 5). Section 1 says the shipped cdk.json has
# strictKeys true; the tutorial's answers hold for that config.
STRICT = {**SHIPPED, "strictKeys": True}
WITH_PARCELS = {
    **STRICT,
    "regionSlots": 2,
    "counters": {**SHIPPED["counters"], "parcels": {"start": 1000, "stride": 7}},
}
TWO_REGIONS = {**WITH_PARCELS, "regions": {"us-east-1": 0, "eu-west-1": 1}}
TUTORIAL_SECTIONS = {  # section heading: {port: (config, region)}
    "## 1. Run it on your machine": {8000: (STRICT, None)},
    "## 3. A counter of your own": {8000: (WITH_PARCELS, None)},
    "## 5. A second region": {8001: (TWO_REGIONS, "us-east-1"), 8002: (TWO_REGIONS, "eu-west-1")},
}


def tutorial_sections() -> dict[str, str]:
    text = (DOCS / "tutorial.md").read_text(encoding="utf-8")
    starts = [match.start() for match in re.finditer(r"^## ", text, re.M)] + [len(text)]
    return {text[start:].splitlines()[0]: text[start:end] for start, end in zip(starts, starts[1:])}


def test_every_curl_of_the_tutorial_is_checked():
    sections = tutorial_sections()
    with_curl = {heading for heading, text in sections.items() if console_examples(text)}
    assert with_curl == set(TUTORIAL_SECTIONS), with_curl
    for heading, servers in TUTORIAL_SECTIONS.items():
        ports = {urlsplit(request_of(command)[1]).port for command, _ in console_examples(sections[heading])}
        assert ports == set(servers), (heading, ports)


@pytest.mark.parametrize("heading", TUTORIAL_SECTIONS)
def test_the_tutorial_s_answers_are_the_local_server_s(heading):
    examples = console_examples(tutorial_sections()[heading])
    servers = {
        port: LocalTickets(config, region=region) for port, (config, region) in TUTORIAL_SECTIONS[heading].items()
    }
    try:
        for server in servers.values():
            server.start()
        for shown, answered in answers(servers, examples):
            assert answered == shown, heading
    finally:
        for server in servers.values():
            server.stop()


def test_the_pages_name_the_port_make_serve_listens_on():
    port = re.search(r"^PORT \?= (\d+)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.M)
    assert port is not None and int(port.group(1)) == urlsplit(MAKE_SERVE_URL).port
