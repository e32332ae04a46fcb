"""Reading the Markdown documents as the docs tests need them: which documents there are, their prose
(outside code), their code (fenced blocks and code spans), their links and headings' anchors. Plain text
only (no imports beyond the standard library), so every tier may use it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
GLOSSARY = DOCS / "glossary.md"
INDEX = DOCS / "README.md"
# The pages a reader meets: the README and everything under docs/ (CONTRIBUTING.md and bench/README.md are
# for contributors; their links are checked, not their length or terms).
PAGES = sorted([README, *DOCS.rglob("*.md")])
DOCUMENTS = sorted([*PAGES, REPO / "CONTRIBUTING.md", REPO / "bench" / "README.md"])

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)  # fenced, in a list item too
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[(?P<text>(?:[^\]`]|`[^`\n]*`)*)\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def words(path: Path) -> int:
    """Words as `wc -w` counts them: runs of characters between whitespace, code included."""
    return len(path.read_text(encoding="utf-8").split())


def without_fences(markdown: str) -> str:
    return FENCE.sub("", markdown)


def prose(markdown: str) -> str:
    """The text outside fenced code blocks and code spans, where a `[x](y)` is not a link."""
    return CODE_SPAN.sub("", without_fences(markdown))


def code(markdown: str) -> list[str]:
    """Every fenced block and every code span outside them, as text."""
    fenced = [match.group(0) for match in FENCE.finditer(markdown)]
    return fenced + [span.strip("`") for span in CODE_SPAN.findall(without_fences(markdown))]


def code_spans(markdown: str) -> list[str]:
    return [span.strip("`") for span in CODE_SPAN.findall(without_fences(markdown))]


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces to hyphens,
    and -1, -2, ... on repeats."""
    seen: dict[str, int] = {}
    result = set()
    for heading in HEADING.findall(without_fences(markdown)):
        text = LINK.sub(lambda link: link.group("text"), heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def links(markdown: str) -> list[str]:
    """Every link target outside code. A code span in a link's text leaves the link (`[](target)`); a
    `[x](y)` written inside a code span is no link."""
    return [match.group("target") for match in LINK.finditer(prose(markdown))]


def relative_links(markdown: str) -> list[str]:
    return [target for target in links(markdown) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def resolve(document: Path, target: str) -> tuple[Path, str]:
    """A relative link's file (the document itself for `#anchor`) and its anchor."""
    path, _, anchor = target.partition("#")
    return ((document.parent / path).resolve() if path else document), anchor


def segments(markdown: str) -> Iterator[tuple[str, str | None]]:
    """The prose of a document outside fenced blocks and headings, in order, as (text, link target): a link's
    text with its target, plain text with None. Code spans outside links are left out: a term written as
    code (`regionSlots` in a JSON example) is not a use in prose."""
    body = "\n".join(line for line in without_fences(markdown).splitlines() if not HEADING.match(line))
    position = 0
    for match in re.finditer(f"{LINK.pattern}|{CODE_SPAN.pattern}", body):
        yield body[position : match.start()], None
        if match.group("target") is not None:
            yield match.group("text"), match.group("target")
        position = match.end()
    yield body[position:], None


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


def request_of(command: list[str]) -> tuple[str, str, dict[str, str], bool]:
    """(method, URL, headers, whether curl prints the status instead of the body) of a curl command line; only
    the options the documents use."""
    method, headers, url, status_only = "GET", {}, None, False
    arguments = iter(command[1:])
    for argument in arguments:
        if argument == "-s":
            continue
        if argument == "-H":
            name, _, value = next(arguments).partition(":")
            headers[name.strip()] = value.strip()
        elif argument == "-X":
            method = next(arguments)
        elif argument in ("-o", "-w"):  # -o /dev/null -w '%{http_code}\n': the status alone
            status_only = status_only or next(arguments) == "%{http_code}\\n"
        elif argument.startswith("http://"):
            url = argument
        else:
            raise AssertionError(f"a curl option the docs tests do not know: {argument!r} in {command}")
    assert url is not None, command
    return method, url, headers, status_only
