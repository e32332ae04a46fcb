"""What the documents name exists: every file path (a code span that holds one, or a repository path in prose),
every `make X` target and every `python -m MODULE` in README.md and docs/; every file path named in the comments
and docstrings of every Python file and in the config files (Makefile, pyproject.toml, cdk.json, package.json,
the workflows, requirements files' comments), by the same rules and the same allow-list; and every reference to
a page of docs/ (with its anchor) anywhere in the repository's code, tests and other documents. Read from disk:
nothing is imported or run."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from docs_text import DOCS, PAGES, REPO, anchors, code, code_spans, prose
from repository_files import repository_files

# Paths a page, a comment, a docstring or a config file may name that the repository does not hold, by prefix, each
# with the reason.
NOT_IN_THE_REPOSITORY = {
    ".venv/": "made by every make target (CONTRIBUTING.md: Setting up)",
    ".venv-examples/": "the installed wheel's venv, made by tests/installed.py",
    ".venv-sets/": "each make target's requirement set alone, made by tests/installed.py",
    ".tools/": "make's pinned Node",
    "node_modules/": "npm install's, which make synth, make deploy and make test run",
    "cdk.out": "what synthesis writes",
    "bench/out/": "what make bench writes",
    "dist/": "what pip wheel and npm run build write",
    "build/": "setuptools' staging folder, which python -m build --wheel leaves (make clean removes it)",
    "clients/typescript/dist/": "the TypeScript client's build (npm run build)",
    "~/.aws": "a user's AWS configuration",
    "invoices/cdk.json": "the series worked example's own config, in a directory of the reader's",
    "INV/": "an invoice id in the series worked example's format",
    "tickets-client/testing": "an npm import specifier: clients/typescript's export of src/testing.ts",
    "application/": "a media type, not a path",
    "text/": "a media type, not a path",
    "results.json": "what make bench writes into bench/out/ (bench/README.md)",
    "table.md": "what make bench writes into bench/out/ (bench/README.md)",
    "manifest.json": "a cloud assembly's (cdk.out), which synthesis writes",
    "validation-report.json": "the validation plugins' report in a cloud assembly (cdk-nag, the CDK's own)",
    ".tickets-local/": "the local server's key files' folder (git-ignored), as --key-file names it",
    "update_ssm.yml": "a workflow of Powertools' own repository, which publishes its layers' parameters",
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
# A path in plain text; one that follows a `$` is a variable's (`$RUNNER_TEMP/x.txt`).
_PROSE_PATH = re.compile(r"(?<![\w/.`$-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|json|toml|txt|ts|yml))(?![\w/])")
_MAKE = re.compile(r"(?:^|[\s`($;&|])make((?:[ \t]+[a-z][\w-]*(?![\w=-]))+)", re.M)
_PYTHON_M = re.compile(r"\bpython3?\s+-m\s+([A-Za-z_][\w.]*)")
FILES = repository_files()
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


def missing_path(token: str, bases: tuple[Path, ...] = (REPO,)) -> bool:
    """Whether `token` names nothing: a path resolved from any of `bases` (a page's paths from the repository's
    root), a file's name alone anywhere in the repository; the allow-list's prefixes are never missing."""
    token = token.removeprefix("./")
    if token.startswith(tuple(NOT_IN_THE_REPOSITORY)) or any((base / token.rstrip("/")).exists() for base in bases):
        return False
    token = token.rstrip("/")
    return "/" in token or token not in FILE_NAMES  # a file's name alone: a file of that name in the repository


def make_targets() -> set[str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    targets = set()
    for line in re.findall(r"^([\w.-]+(?: +[\w.-]+)*) *:(?!=)", makefile, re.M):
        targets.update(line.split())
    return targets


def named_targets(markdown: str) -> set[str]:
    return {target for block in code(markdown) for run in _MAKE.findall(block) for target in run.split()}


def module_exists(module: str) -> bool:
    """`python -m module` runs a file of the repository's packages: the module's own, or a package's __main__.py."""
    for root in (REPO, REPO / "lambda_src", REPO / "clients" / "python"):
        base = root.joinpath(*module.split("."))
        if base.with_suffix(".py").is_file() or (base / "__main__.py").is_file():
            return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_path_a_page_names_exists(page):
    missing = sorted(token for token in paths_named_in(page) if missing_path(token, bases_of(page)))
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
        "See `tickets_admin/commands/fence.py`, `lane_item.py`, `/_blocks/{key}`, `application/json`, `key@E#s`, "
        "tests/functional/series/test_series.py and [a link](docs/x.md). `.venv/bin/python -m tickets_admin raise` and "
        "`python3 -m bench.series`."
    )
    assert named_targets(text) == {"serve", "lint", "test-unit", "deploy"}
    assert named_paths(text) == {
        "tickets_admin/commands/fence.py",
        "lane_item.py",
        "application/json",
        "tests/functional/series/test_series.py",
    }
    assert not missing_path("tickets_admin/commands/fence.py") and not missing_path("lane_item.py")
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


# --- paths named everywhere else: other documents, code comments, docstrings and config files ---------------

# Config files read whole (each of these names anywhere in the repository), besides the workflows; of a
# requirements file, only its comments.
_CONFIG_FILES = {"Makefile", "pyproject.toml", "cdk.json", "package.json", "tsconfig.json"}
_WORKFLOWS = REPO / ".github" / "workflows"
_COMMENT = re.compile(r"(?:^|\s)#(.*)$", re.M)
# A path in plain text, or a file's name alone (which a file of the repository has, wherever it is).
_PLAIN_PATH = re.compile(r"(?<![\w/.`$-])((?:[\w.-]+/)*[\w.-]+\.(?:py|md|json|toml|txt|ts|yml))(?![\w/])")
_TYPESCRIPT_COMMENT = re.compile(r"(?<![:\w])//([^\n]*)|/\*(.*?)\*/", re.S)  # not a URL's //
# The folders the packages are imported from: a comment may name tickets/settings.py.
_IMPORT_ROOTS = (REPO / "lambda_src", REPO / "clients" / "python")


def comments_and_docstrings(source: str) -> str:
    """A Python file's comments and its string statements (docstrings: a module's, a class's, a function's, an
    attribute's), one a line; code and other strings left out."""
    lines = io.StringIO(source).readline
    comments = [token.string[1:] for token in tokenize.generate_tokens(lines) if token.type == tokenize.COMMENT]
    strings = [
        node.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    ]
    return "\n".join([*comments, *strings])


def prose_paths(text: str) -> set[str]:
    """Paths and file names written in plain text (a comment, a docstring, a config file), quoted, in backticks
    or not."""
    return {token for token in _PLAIN_PATH.findall(text.replace("`", " ")) if not _NOT_A_PATH.search(token)}


def paths_named_in(path: Path) -> set[str]:
    """The paths a file names, by its kind: a Markdown document's (named_paths; CHANGELOG's unreleased section),
    a Python file's comments and docstrings, a TypeScript file's comments, a config file's whole text, a
    requirements file's comments; none for other files."""
    if path.suffix == ".md":
        return named_paths(_current_text(path))
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        return prose_paths(comments_and_docstrings(text))
    if path.suffix == ".ts":
        return prose_paths("\n".join(map("".join, _TYPESCRIPT_COMMENT.findall(text))))
    if path.name in _CONFIG_FILES or (path.parent == _WORKFLOWS and path.suffix in (".yml", ".yaml")):
        return prose_paths(text)
    if path.name.startswith("requirements") and path.suffix == ".txt":
        return prose_paths("\n".join(_COMMENT.findall(text)))
    return set()


def bases_of(path: Path) -> tuple[Path, ...]:
    """Where the paths a file names start: a page's (README.md, docs/) from the repository's root, as a reader
    takes them; any other file's from its folder or one above it (a module of tickets_deploy may name a file of
    its ledger package from there, the TypeScript client's package.json its dist folder), or where the packages
    are imported from (tickets/settings.py)."""
    if path in PAGES:
        return (REPO,)
    return (*[folder for folder in path.parents if folder.is_relative_to(REPO)], *_IMPORT_ROOTS)


def missing_elsewhere(files: list[Path]) -> dict[str, list[str]]:
    named = {path: paths_named_in(path) for path in files}
    found = {
        _name(path): sorted(t for t in tokens if missing_path(t, bases_of(path))) for path, tokens in named.items()
    }
    return {name: tokens for name, tokens in found.items() if tokens}


def test_every_path_named_outside_the_pages_exists():
    """A test file moved into a tier, a module moved into a package: every comment, docstring, config file and
    other document (CONTRIBUTING.md, the READMEs of bench/, examples/ and clients/) that still names the old path
    fails here, each file listed with the paths it names that are gone."""
    files = [path for path in FILES if path not in PAGES and not path.is_relative_to(_HISTORICAL)]
    missing = missing_elsewhere(files)
    assert not missing, missing


def test_the_check_outside_the_pages_finds_what_it_looks_for(tmp_path):
    source = (
        '"""See tests/unit/test_house.py and `tickets_deploy/ledger/rules.py`; ledger/model.py (from here)."""\n'
        "# tests/test_gone.py moved; /var/task/tickets/app.py is Lambda's, cdk.out/manifest.json synthesis's\n"
        "# timing.py and gone.py are names alone\n"
        'NAME = "tests/not_a_comment.py"\n'
    )
    text = comments_and_docstrings(source)
    assert "not_a_comment" not in text
    assert prose_paths(text) == {
        "tests/unit/test_house.py",
        "tickets_deploy/ledger/rules.py",
        "ledger/model.py",
        "tests/test_gone.py",
        "cdk.out/manifest.json",
        "timing.py",
        "gone.py",
    }
    module = REPO / "tickets_deploy" / "schema.py"
    assert not missing_path("ledger/model.py", bases_of(module)) and missing_path("ledger/model.py")
    assert not missing_path("tickets/settings.py", bases_of(module)) and not missing_path("cdk.out/manifest.json")
    assert missing_path("tests/test_gone.py", bases_of(module)) and missing_path("gone.py", bases_of(module))
    assert not missing_path("timing.py", bases_of(module))
    requirements = tmp_path / "requirements-x.txt"
    requirements.write_text("# pinned for tools/nothing.py\nfoo==1  # and tools/gone.py\nbar/baz.txt\n")
    assert paths_named_in(requirements) == {"tools/nothing.py", "tools/gone.py"}
    workflow = "run: python tools/set_version.py > $RUNNER_TEMP/x.txt\n"
    assert prose_paths(workflow) == {"tools/set_version.py"}
    typescript = tmp_path / "x.ts"
    typescript.write_text('// see src/a.ts\nconst u = "https://h/b/c.ts"; /* and\n test/d.ts */ f("e/f.ts");\n')
    assert paths_named_in(typescript) == {"src/a.ts", "test/d.ts"}


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
