"""The documents a reader meets (README.md and docs/) hold together: links go to files and headings that exist, the
README and every page stay within their word limits, every page is in the index once, and the glossary defines each term
of art, which every page links at its first use. What the documents name (paths, make targets, `python -m` modules) is
checked in test_docs_names.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_text import (
    DOCUMENTS,
    GLOSSARY,
    INDEX,
    PAGES,
    README,
    REPO,
    anchors,
    relative_links,
    resolve,
    segments,
    words,
)

README_WORDS = 1500  # a landing page
PAGE_WORDS = 5000
DOCS_WORDS = 22_000  # every page of docs/ together: short pages, each fact once
# Each term of art a page must link to its glossary entry where it first uses it, by the entry's anchor, as
# prose writes it. Plain words match in any case; camelCase names and the header only as written.
TERMS = {
    "lane": r"\blanes?\b",
    "slot": r"\bslots?\b",
    "regionslots": r"\bregionSlots\b",
    "stride": r"\bstrides?\b",
    "shard": r"\bshards?\b",
    "step": r"\bstep\b(?!\s*\d)",  # "step 2" of a procedure is not the lane's step
    "range-block": r"\brange[ -]blocks?\b",
    "lease": r"\bleases?\b",
    "ledger": r"\bledgers?\b",
    "fence": r"\bfences?\b",
    "epoch": r"\bepochs?\b",
    "series": r"\bseries\b",
    "strictkeys": r"\bstrictKeys\b",
    "idempotency-key": r"\bIdempotency-Keys?\b",
    "defaultkey": r"\bdefaultKey\b",
    "unconfigured-key": r"\bunconfigured keys?\b",
    "deployed-settings": r"\bdeployed settings\b",
    "permanent-field": r"\bpermanent fields?\b",
    "pending-fence": r"\bpending fences?\b",
    "tickets-left": r"\btickets left\b",
    "days-left": r"\bdays left\b",
    "opaque-id": r"\bopaque ids?\b",
    "key-version": r"\bkey versions?\b",
}
# And terms the glossary defines that pages may use without a link at each first use.
MORE_GLOSSARY_ENTRIES = {"compat", "ledger-version", "layout", "rollout-rule", "retired-slot", "stopped-lane", "signer"}


def _pattern(term: str) -> re.Pattern[str]:
    source = TERMS[term]
    return re.compile(source, 0 if re.search(r"[A-Z]", source) else re.I)


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_anchors_follow_githubs_rules():
    text = "# Tickets\n## Configuration (`cdk.json`)\n## Never twice: what is checked, and what is not\n"
    text += "## Day 2\n## Day 2\n## 5. A second region\n"
    assert anchors(text) == {
        "tickets",
        "configuration-cdkjson",
        "never-twice-what-is-checked-and-what-is-not",
        "day-2",
        "day-2-1",
        "5-a-second-region",
    }


def test_links_in_code_are_not_links():
    text = "[a](a.md) `[b](b.md)`\n```\n[c](c.md)\n```\n[d](https://example.com) [e](#e) [`f`](f.md)\n"
    assert relative_links(text) == ["a.md", "#e", "f.md"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_every_relative_link_points_to_an_existing_file_and_heading(document):
    broken = []
    for link in relative_links(document.read_text(encoding="utf-8")):
        target, anchor = resolve(document, link)
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text(encoding="utf-8")):
            broken.append(f"{link}: no such heading in {target.relative_to(REPO)}")
    assert not broken, broken


def test_the_readme_is_a_landing_page_and_no_page_is_too_long():
    assert words(README) <= README_WORDS, f"README.md has {words(README)} words, at most {README_WORDS}"
    long = {_name(page): words(page) for page in PAGES if words(page) > PAGE_WORDS}
    assert not long, f"pages over {PAGE_WORDS} words (split them): {long}"
    total = sum(words(page) for page in PAGES if page != README)
    assert total <= DOCS_WORDS, f"docs/ has {total} words, at most {DOCS_WORDS}: say each thing once, and shortly"


def test_the_readme_gives_both_set_up_commands():
    text = README.read_text(encoding="utf-8")
    assert "make serve" in text and "make test" in text


# --- the index ---------------------------------------------------------------------------------------------

_INDEX_ROW = re.compile(r"^\| \[[^\]]+\]\((?P<page>[^)#]+)\) \|[^|]*\|$", re.M)


def test_the_index_lists_every_page_once():
    index = INDEX.read_text(encoding="utf-8")
    listed = [(INDEX.parent / row["page"]).resolve() for row in _INDEX_ROW.finditer(index)]
    pages = {page.resolve() for page in PAGES} - {README.resolve(), INDEX.resolve()}
    assert len(listed) == len(set(listed))
    assert set(listed) == pages, (sorted(map(str, pages - set(listed))), sorted(map(str, set(listed) - pages)))


# --- the glossary --------------------------------------------------------------------------------------------


def test_the_glossary_defines_every_term_of_art():
    defined = anchors(GLOSSARY.read_text(encoding="utf-8"))
    missing = (set(TERMS) | MORE_GLOSSARY_ENTRIES) - defined
    assert not missing, f"docs/glossary.md has no entry (### heading) for {sorted(missing)}"


def first_unlinked_uses(page: Path, glossary: Path = GLOSSARY) -> dict[str, str]:
    """Each term whose first use in the page's prose is not inside a link to its glossary entry: the text
    around that use."""
    first: dict[str, str] = {}
    done: set[str] = set()
    for text, target in segments(page.read_text(encoding="utf-8")):
        for term in TERMS.keys() - done:
            use = _pattern(term).search(text)
            if use is None:
                continue
            done.add(term)
            if target is None or not _is_entry(resolve(page, target), glossary, term):
                first[term] = " ".join(text[max(0, use.start() - 40) : use.end() + 20].split())
    return first


def _is_entry(link: tuple[Path, str], glossary: Path, term: str) -> bool:
    """A link to the term's entry, or to a longer term's that begins or ends with it (a "ledger version" link, a
    "lease epoch" one)."""
    path, anchor = link
    return path == glossary and (anchor == term or anchor.startswith(f"{term}-") or anchor.endswith(f"-{term}"))


@pytest.mark.parametrize("page", [page for page in PAGES if page != GLOSSARY], ids=_name)
def test_each_term_links_to_the_glossary_at_its_first_use(page):
    found = first_unlinked_uses(page)
    assert not found, f"{_name(page)}: first use not linked to its docs/glossary.md entry: {found}"


def test_the_term_check_sees_a_first_use_outside_a_link(tmp_path):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(
        "# Lanes\n\nEach [lane](glossary.md#lane) is a lane. A `step` in code, then a step;\n"
        "```\nslot\n```\nthe [slot of it](other.md) and a [slot](glossary.md#slot). Step 2 is no step.\n",
        encoding="utf-8",
    )
    found = first_unlinked_uses(page, glossary=page.parent / "glossary.md")
    assert found.keys() == {"step", "slot"}, found  # the lane was linked first; the heading does not count
    assert "then a step" in found["step"] and "slot of it" in found["slot"]
