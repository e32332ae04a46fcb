"""What the documents name exists: every file path (a code span that holds one, or a repository path in prose),
every `make X` target and every `python -m MODULE` in README.md and docs/; and every reference to a page of
docs/ (with its anchor) anywhere in the repository's code, tests and other documents. Read from disk: nothing
is imported or run."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from docs_text import DOCS, PAGES, REPO, anchors, code, code_spans, prose

# Paths a page may name that the repository does not hold, by prefix, each with the reason.
NOT_IN_THE_REPOSITORY = {
    ".venv/": "made by every make target (CONTRIBUTING.md: Setting up)",
    ".tools/": "make's pinned Node",
    "node_modules/": "npm install's, which make synth, make deploy and make test run",
    "cdk.out": "what synthesis writes",
    "bench/out/": "what make bench writes",
    "dist/": "what pip wheel and npm run build write",
    "clients/typescript/dist/": "the TypeScript client's build (npm run build)",
    "~/.aws": "a user's AWS configuration",
    "invoices/cdk.json": "the series worked example's own config, in a directory of the reader's",
    "INV/": "an invoice id in the series worked example's format",
    "tickets-client/testing": "an npm import specifier: clients/typescript's export of src/testing.ts",
    "application/": "a media type, not a path",
    "text/": "a media type, not a path",
}
# `python -m` modules that are not the repository's own, each with what it is.
NOT_OURS = {
    "pip": "pip itself",
    "venv": "the standard library's",
    "build": "the PyPA build tool (releases: docs/how-to/release.md)",
    "moto.server": "moto's server mode (moto[server], which make test installs)",
    "pytest": "the test runner",
}
EXTENSIONS = (".py", ".md", ".json", ".jsonl", ".toml", ".txt", ".ts", ".yml", ".yaml", ".cfg", ".csv")
_NOT_A_PATH = re.compile(r"[\s{}<>*$#@=:|'\"\[\](),^`]|^[/?~-]|\.\.\.")  # routes, patterns, commands, elisions
_PROSE_PATH = re.compile(r"(?<![\w/.`-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|json|toml|txt|ts|yml))(?![\w/])")
_MAKE = re.compile(r"(?:^|[\s`($;&|])make((?:[ \t]+[a-z][\w-]*(?![\w=-]))+)", re.M)
_PYTHON_M = re.compile(r"\bpython3?\s+-m\s+([A-Za-z_][\w.]*)")
_SKIPPED_DIRECTORIES = {".git", ".venv", ".venv-examples", ".venv-checkov", "node_modules", ".tools", "cdk.out"}
_SKIPPED_DIRECTORIES |= {"__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", "dist", "build"}


def _repository_files() -> list[Path]:
    found = []
    for directory, subdirectories, files in os.walk(REPO):
        subdirectories[:] = [
            name for name in subdirectories if name not in _SKIPPED_DIRECTORIES and not name.startswith(".venv")
        ]
        found += [Path(directory) / name for name in files if not name.endswith(".pyc")]
    return found


FILES = _repository_files()
FILE_NAMES = {path.name for path in FILES}


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


def named_paths(markdown: str) -> set[str]:
    """Code spans that hold a path (a `/`, or a file name with a known extension), and repository paths in
    prose (outside links, whose targets test_docs.py checks)."""
    spans = {span.strip() for span in code_spans(markdown)}
    in_prose = set(_PROSE_PATH.findall(re.sub(r"\]\([^)]*\)", "]", prose(markdown))))
    candidates = {token for token in spans if "/" in token or token.endswith(EXTENSIONS)} | in_prose
    return {token for token in candidates if not _NOT_A_PATH.search(token)}


def missing_path(token: str) -> bool:
    if token.startswith(tuple(NOT_IN_THE_REPOSITORY)):
        return False
    if "/" not in token.rstrip("/"):  # a file's name alone: a file of that name in the repository
        return token.rstrip("/") not in FILE_NAMES and not (REPO / token).exists()
    return not (REPO / token.rstrip("/")).exists()


def make_targets() -> set[str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    targets = set()
    for line in re.findall(r"^([\w.-]+(?: +[\w.-]+)*) *:(?!=)", makefile, re.M):
        targets.update(line.split())
    return targets


def named_targets(markdown: str) -> set[str]:
    return {target for block in code(markdown) for run in _MAKE.findall(block) for target in run.split()}


def module_exists(module: str) -> bool:
    """`python -m module` runs a file of the repository's packages: module.py, or a package's __main__.py."""
    for root in (REPO, REPO / "lambda_src", REPO / "clients" / "python"):
        base = root.joinpath(*module.split("."))
        if base.with_suffix(".py").is_file() or (base / "__main__.py").is_file():
            return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_path_a_page_names_exists(page):
    missing = sorted(token for token in named_paths(page.read_text(encoding="utf-8")) if missing_path(token))
    assert not missing, f"{_name(page)} names paths the repository does not have: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_make_target_a_page_names_exists(page):
    missing = sorted(named_targets(page.read_text(encoding="utf-8")) - make_targets())
    assert not missing, f"{_name(page)} names make targets the Makefile does not have: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_python_m_module_a_page_names_exists(page):
    named = set(_PYTHON_M.findall(page.read_text(encoding="utf-8")))
    missing = sorted(module for module in named - NOT_OURS.keys() if not module_exists(module))
    assert not missing, f"{_name(page)} names `python -m` modules the repository does not have: {missing}"


def test_the_checks_find_what_they_look_for():
    text = (
        "Run `make serve` or\n```sh\n$ make lint test-unit VERSION=1\nmake deploy FENCE=1\n```\nthen make sure. "
        "See `tickets_admin/fence.py`, `lane_item.py`, `/_blocks/{key}`, `application/json`, `key@E#s`, "
        "tests/functional/test_series.py and [a link](docs/x.md). `python -m tickets_admin raise` and "
        "`python3 -m bench.series`."
    )
    assert named_targets(text) == {"serve", "lint", "test-unit", "deploy"}
    assert named_paths(text) == {
        "tickets_admin/fence.py",
        "lane_item.py",
        "application/json",
        "tests/functional/test_series.py",
    }
    assert not missing_path("tickets_admin/fence.py") and not missing_path("lane_item.py")
    assert not missing_path("application/json") and missing_path("tickets_admin/nothing.py")
    assert set(_PYTHON_M.findall(text)) == {"tickets_admin", "bench.series"}
    assert module_exists("tickets_admin") and module_exists("bench.series") and module_exists("tickets_client")
    assert not module_exists("tickets_admin.nothing")
    assert {"serve", "deploy", "test-unit", "test-functional", "generated"} <= make_targets()


def test_the_pages_name_the_one_place_the_powertools_release_is_pinned():
    text = " ".join((DOCS / "reference" / "monitoring.md").read_text(encoding="utf-8").split())
    stated = re.search(r"Powertools layer \(the release is pinned once, in `([^`]+)`", text)
    assert stated, "docs/reference/monitoring.md no longer says where the Powertools release is pinned"
    defined = [
        path.relative_to(REPO).as_posix()
        for path in sorted(REPO.glob("tickets_*/*.py"))
        if re.search(r"^POWERTOOLS_VERSION = ", path.read_text(), re.M)
    ]
    assert defined == [stated.group(1)]


# --- references to docs/ from everywhere else ---------------------------------------------------------------

_DOCS_REFERENCE = re.compile(r"\bdocs/((?:[\w-]+/)*[\w.-]+\.md)(?:#([\w-]+))?")
_TEXT_FILES = (".py", ".ts", ".json", ".toml", ".md", ".yml", ".txt", ".cfg")
# Files that quote docs/ as it was when they were written: the ledgers of earlier formats, kept byte for byte.
_HISTORICAL = REPO / "tests" / "fixtures" / "ledgers"
_THIS_MODULE = Path(__file__)  # its own examples of broken references
_RELEASED = re.compile(r"^## \[\d+\.\d+\.\d+\] - \d{4}-\d\d-\d\d", re.M)  # CHANGELOG's released sections


def _referring_files() -> list[Path]:
    return [
        path
        for path in FILES
        if (path.suffix in _TEXT_FILES or path.name == "Makefile")
        and not path.is_relative_to(_HISTORICAL)
        and path != _THIS_MODULE
    ]


def _current_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.name == "CHANGELOG.md" and (released := _RELEASED.search(text)):
        return text[: released.start()]  # a release's notes name the docs of their day
    return text


def broken_references(text: str) -> list[str]:
    broken = []
    for page, anchor in _DOCS_REFERENCE.findall(text):
        target = DOCS / page
        if not target.is_file():
            broken.append(f"docs/{page}: no such page")
        elif anchor and anchor not in anchors(target.read_text(encoding="utf-8")):
            broken.append(f"docs/{page}#{anchor}: no such heading")
    return broken


def test_every_reference_to_a_page_of_docs_resolves():
    """Error messages, --help texts, comments, tests and documents cite docs/ by path and anchor; a page moved
    or a heading renamed fails here, naming each file that still cites the old one."""
    broken = {
        _name(path): problems for path in _referring_files() if (problems := broken_references(_current_text(path)))
    }
    assert not broken, broken


def test_a_broken_reference_is_found():
    assert broken_references("see docs/explanation/design.md#lanes and docs/reference/cli.md") == []
    assert broken_references("(docs/operations.md#changing-a-layout), docs/glossary.md#no-such-term") == [
        "docs/operations.md: no such page",
        "docs/glossary.md#no-such-term: no such heading",
    ]
