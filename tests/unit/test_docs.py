"""The Markdown documents link only to files that exist, and to headings those files have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "bench" / "README.md", *(REPO / "docs").glob("*.md")]
)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _prose(markdown: str) -> str:
    """The text outside fenced code blocks and code spans, where a `[x](y)` is not a link."""
    return _CODE_SPAN.sub("", _FENCE.sub("", markdown))


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces to hyphens,
    and -1, -2, ... on repeats."""
    seen: dict[str, int] = {}
    result = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def relative_links(markdown: str) -> list[str]:
    return [target for target in _LINK.findall(_prose(markdown)) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def test_anchors_follow_githubs_rules():
    text = "# Tickets\n## Configuration (`cdk.json`)\n## Never twice: what is checked, and what is not\n"
    text += "## Day 2\n## Day 2\n"
    assert anchors(text) == {
        "tickets",
        "configuration-cdkjson",
        "never-twice-what-is-checked-and-what-is-not",
        "day-2",
        "day-2-1",
    }


def test_links_in_code_are_not_links():
    text = "[a](a.md) `[b](b.md)`\n```\n[c](c.md)\n```\n[d](https://example.com) [e](#e)\n"
    assert relative_links(text) == ["a.md", "#e"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_points_to_an_existing_file_and_heading(document):
    broken = []
    for link in relative_links(document.read_text(encoding="utf-8")):
        path, _, anchor = link.partition("#")
        target = (document.parent / path).resolve() if path else document
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text(encoding="utf-8")):
            broken.append(f"{link}: no such heading in {target.relative_to(REPO)}")
    assert not broken, broken


# --- examples and facts the documents state ---------------------------------------------------------


def test_operations_names_the_one_place_the_powertools_release_is_pinned():
    text = " ".join((REPO / "docs" / "operations.md").read_text(encoding="utf-8").split())
    stated = re.search(r"Powertools layer \(the release is pinned once, in `([^`]+)`", text)
    assert stated, "docs/operations.md no longer says where the Powertools release is pinned"
    defined = [
        path.relative_to(REPO).as_posix()
        for path in sorted(REPO.glob("tickets_*/*.py"))
        if re.search(r"^POWERTOOLS_VERSION = ", path.read_text(), re.M)
    ]
    assert defined == [stated.group(1)]
