"""The test suite's own layout (CONTRIBUTING.md, Layout): every test file sits in a tier (or a feature folder in it)
that `pytest` and `make test` run, under a name no other tier uses (pytest imports test files by their bare name)."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def tier_folders() -> list[str]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]


def test_every_test_file_is_in_a_tier_that_pytest_runs():
    tiers = {REPO / path for path in tier_folders()}
    # A tier may group its files by feature in folders of its own (tests/functional/opaque/): pytest collects them.
    assert {TESTS / path.relative_to(TESTS).parts[0] for path in TESTS.rglob("test_*.py")} <= tiers
    assert {path for path in TESTS.iterdir() if path.is_dir() and any(path.glob("test_*.py"))} == tiers


def test_no_two_tiers_hold_a_test_file_of_the_same_name():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []


def test_make_test_runs_every_tier():
    """`make test` runs the tiers in groups (the Makefile's test-unit, test-functional, ..., test-build-installs):
    together they name each tier once, or twice split by the `installs` marker (`-m installs` in one group,
    `-m "not installs"` in another: every test in exactly one). A group's rule may be shared (`test-functional
    test-models ...:`, whose recipe names `tests/$(@:test-%=%)`, the group's own folder)."""
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n\t(.*)$", makefile, re.M).group(1)
    groups = re.findall(r"test-[a-z-]+", recipe)

    def folders(group: str) -> list[tuple[str, str | None]]:
        rule = re.search(rf"^((?:[\w-]+ )*{group}(?: [\w-]+)*):.*\n\t(.*)$", makefile, re.M)
        assert rule is not None, f"no rule makes {group}"
        command = rule.group(2).replace("$(@:test-%=%)", group.removeprefix("test-"))
        marker = re.search(r' -m ("not installs"|installs)(?=\s|$)', command)
        return [(folder, marker and marker.group(1)) for folder in re.findall(r"tests/(\w+)", command)]

    named: dict[str, list[str | None]] = {}
    for group in groups:
        for folder, marker in folders(group):
            named.setdefault(folder, []).append(marker)
    assert set(named) == {path.removeprefix("tests/") for path in tier_folders()}
    for folder, markers in named.items():
        assert sorted(markers, key=str) in ([None], ['"not installs"', "installs"]), (folder, markers)
