"""The README's example answers are the local server's: each `$ curl` line of its console blocks is sent, as curl
would send it, to `python -m tickets_local` (what `make serve` runs) serving the repository's cdk.json, in the
README's order, and the answer must be the lines the README prints under it."""

from __future__ import annotations

import json
import re
import shlex
from urllib.parse import urlsplit

import pytest
from docs_text import FENCE, README, REPO

from local_support import call
from tickets_local.testing import LocalTickets

README_URL = "http://127.0.0.1:8000"  # where `make serve` listens, as the README writes it


def console_examples(markdown: str) -> list[tuple[list[str], str]]:
    """Each `$ curl ...` line of the console blocks (its arguments, the comment after `#` left out) and the
    output the block shows under it."""
    examples: list[tuple[list[str], str]] = []
    for block in FENCE.finditer(markdown):
        if not block.group(0).startswith("```console"):
            continue
        curl = False
        for line in block.group(0).splitlines()[1:-1]:
            if line.startswith("$ "):
                command = shlex.split(line[2:], comments=True)
                curl = command[0] == "curl"
                if curl:
                    examples.append((command, ""))
            elif curl and examples and not examples[-1][1] and line:
                examples[-1] = (examples[-1][0], line)
    return examples


def request_of(command: list[str]) -> tuple[str, str, dict[str, str]]:
    """(method, path and query, headers) of a curl command line; only the options the README uses."""
    method, headers, url = "GET", {}, None
    arguments = iter(command[1:])
    for argument in arguments:
        if argument == "-s":
            continue
        if argument == "-H":
            name, _, value = next(arguments).partition(":")
            headers[name.strip()] = value.strip()
        elif argument == "-X":
            method = next(arguments)
        elif argument.startswith(README_URL):
            url = argument
        else:
            raise AssertionError(f"a curl option this test does not know: {argument!r} in {command}")
    assert url is not None, command
    parts = urlsplit(url)
    return method, parts.path + (f"?{parts.query}" if parts.query else ""), headers


def test_the_readme_shows_curl_examples_with_their_answers():
    examples = console_examples(README.read_text(encoding="utf-8"))
    assert len(examples) >= 4 and all(answer for _, answer in examples), examples


def test_console_examples_are_read_as_written():
    text = "```console\n$ make serve\n$ curl -s -H 'Accept: text/plain' http://127.0.0.1:8000/x  # a comment\n1\n```\n"
    [(command, answer)] = console_examples(text)
    assert request_of(command) == ("GET", "/x", {"Accept": "text/plain"}) and answer == "1"


@pytest.fixture(scope="module")
def shipped_server():
    tickets = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]["tickets"]
    with LocalTickets(tickets) as server:
        yield server


def test_the_readme_s_answers_are_the_local_server_s(shipped_server):
    """In the README's order, on a fresh server: the same tickets, byte for byte (the bare text of a
    `text/plain` answer too, less its final newline, which the console shows as the line's end)."""
    for command, shown in console_examples(README.read_text(encoding="utf-8")):
        method, path, headers = request_of(command)
        reply = call(shipped_server.url, path, method=method, headers=headers)
        assert reply.body.decode().removesuffix("\n") == shown, (shlex.join(command), reply.status, reply.body)
        assert re.match(r"2\d\d$", str(reply.status)), (shlex.join(command), reply.status)


def test_the_readme_names_the_port_make_serve_listens_on():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    port = re.search(r"^PORT \?= (\d+)$", makefile, re.M)
    assert port is not None and int(port.group(1)) == urlsplit(README_URL).port
    assert README.read_text(encoding="utf-8").count(README_URL) >= 4
