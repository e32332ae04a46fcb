"""`make version VERSION=X.Y.Z` (tools/set_version.py): one command writes the release version everywhere it
is written, on a copy of the repository's own files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import tickets
from tools.set_version import PLACES, ROOT, set_version


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for name, _ in PLACES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_every_place_gets_the_version_and_nothing_else_changes(copy: Path):
    before = {name: (copy / name).read_text() for name, _ in PLACES}
    set_version("9.8.7", copy)
    for name, _ in PLACES:
        after = (copy / name).read_text()
        assert "9.8.7" in after
        changed = [(a, b) for a, b in zip(before[name].splitlines(), after.splitlines()) if a != b]
        assert len(changed) == [place for place, _ in PLACES].count(name), name  # the version's lines, only they


@pytest.mark.parametrize("version", ["1.2", "v1.2.3", "01.2.3", "1.2.3 "])
def test_a_version_that_is_not_semantic_is_refused_and_nothing_written(copy: Path, version: str):
    before = {name: (copy / name).read_text() for name, _ in PLACES}
    with pytest.raises(ValueError, match="not a semantic version"):
        set_version(version, copy)
    assert {name: (copy / name).read_text() for name, _ in PLACES} == before


def test_a_place_whose_line_is_gone_stops_it_before_anything_is_written(copy: Path):
    name = PLACES[-1][0]
    (copy / name).write_text("// no user agent here\n")
    first = (copy / PLACES[0][0]).read_text()
    with pytest.raises(ValueError, match="expected one line"):
        set_version("9.8.7", copy)
    assert (copy / PLACES[0][0]).read_text() == first


def test_the_package_carries_the_version_the_changelog_and_the_docs_describe():
    """The version under way is the CHANGELOG's top section, and every version the docs pin is that one."""
    top = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)[0]
    assert tickets.__version__ == top
    docs = "".join(page.read_text() for page in (ROOT / "docs").rglob("*.md"))
    pinned = set(re.findall(r"tickets-server\[cdk\]==(\d+\.\d+\.\d+)", docs))
    assert pinned == {top}
