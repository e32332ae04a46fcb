"""The house's shape (CONTRIBUTING.md, Layout), held so that it stays: the packages build on each other in one
direction (the Lambda's `tickets` on nothing of ours; the deploy side on it; the construct library, the admin
CLI and the local server on those), no module imports another that imports it back, no product module grows
past 400 lines (split it along its seams instead), each name is imported from the one module that defines it
(no module passes on what it imported: a package's `__init__.py` is its public API, the one exception), no file
imports another module's `_private` name, and a package with one public API is entered only through it. Read
from the source: nothing is imported.

An import counts wherever it is written: at module level, inside a function (deferred) and under
`if TYPE_CHECKING:` (type-only). A cycle through a deferred or type-only import is a knot all the same: the
modules cannot be read, tested or moved one without the other."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

from repository_files import REPO, python_files, repository_files

PACKAGES = {
    "tickets": REPO / "lambda_src" / "tickets",
    "tickets_deploy": REPO / "tickets_deploy",
    "tickets_cdk": REPO / "tickets_cdk",
    "tickets_admin": REPO / "tickets_admin",
    "tickets_local": REPO / "tickets_local",
    "tickets_client": REPO / "clients" / "python" / "tickets_client",
}
# Each package and the packages of ours it may import.
MAY_IMPORT = {
    "tickets": set(),
    "tickets_deploy": {"tickets"},
    "tickets_cdk": {"tickets", "tickets_deploy"},
    "tickets_admin": {"tickets", "tickets_deploy"},
    # tickets_client: the test kit's `tickets_client` fixture, imported when it is used, if the client is installed.
    "tickets_local": {"tickets", "tickets_deploy", "tickets_admin", "tickets_client"},
    "tickets_client": set(),  # a distribution of its own (clients/python)
}
# Packages entered only through their `__init__.py` (as Powertools' feature folders are): no module outside one,
# product code, tests, tools, bench or examples alike, imports its submodules, and it exports only what is used.
ONE_PUBLIC_API = {"tickets_deploy.ledger"}
MAX_MODULE_LINES = 400


def modules() -> dict[str, Path]:
    found = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def imported_names(name: str, path: Path) -> list[tuple[str, str | None, ast.stmt]]:
    """(module, name, statement) for every import `name` (the module at `path`) writes anywhere in its source:
    `import a.b` gives ("a.b", None), `from a import b, c` ("a", "b") and ("a", "c"), relative ones resolved."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[tuple[str, str | None, ast.stmt]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found += [(module, alias.name, node) for alias in node.names]
    return found


def dependency(module: str, name: str | None, known: set[str] | dict[str, Path]) -> str:
    """The module an import needs: `from a import b` needs a.b when b is a submodule, else a (a package's
    `__init__.py`, which a submodule's import runs anyway, counts only when a name is taken from it)."""
    return f"{module}.{name}" if name is not None and f"{module}.{name}" in known else module


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours `name` imports: at module level, deferred into a function, or for type checking."""
    return {dependency(module, alias, known) for module, alias, _ in imported_names(name, path)} & known


def import_graph(found: dict[str, Path] | None = None) -> dict[str, set[str]]:
    found = MODULES if found is None else found
    return {name: imports_of(name, path, set(found)) - {name} for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_the_packages_build_on_each_other_in_one_direction():
    crossing = {
        (name, other)
        for name, imported in import_graph().items()
        for other in imported
        if other.split(".")[0] != name.split(".")[0] and other.split(".")[0] not in MAY_IMPORT[name.split(".")[0]]
    }
    assert crossing == set()


def test_no_product_module_is_over_max_module_lines():
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these along their seams: {long}"


def test_the_checks_see_a_cycle_and_every_module():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    found = import_graph()
    assert {"tickets.app", "tickets.series.store", "tickets_deploy.schema", "tickets_cdk.service"} <= set(found)
    assert "tickets.routes" in found["tickets.app"] and "tickets_deploy.field" in found["tickets_deploy.schema"]


def _planted(tmp_path: Path, sources: dict[str, str]) -> dict[str, Path]:
    """A package `planted` of modules with these sources, as modules() names them."""
    found = {}
    for name, source in sources.items():
        path = tmp_path / "planted" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        found[f"planted.{name}" if name != "__init__" else "planted"] = path
    return found


def test_a_cycle_through_a_deferred_or_type_only_import_is_seen(tmp_path):
    deferred = {"a": "from .b import B\n", "b": "def f():\n    from planted.a import A\n"}
    assert cycles(import_graph(_planted(tmp_path / "1", deferred))) == [["planted.a", "planted.b"]]
    type_only = {
        "a": "from .b import B\n",
        "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
    }
    assert cycles(import_graph(_planted(tmp_path / "2", type_only))) == [["planted.a", "planted.b"]]
    # A package's __init__ that imports its submodules, which import each other, makes no cycle of its own.
    package = {"__init__": "from .a import A\n", "a": "from .b import B\n", "b": "X = 1\n"}
    assert cycles(import_graph(_planted(tmp_path / "3", package))) == []


def test_every_package_of_ours_is_in_its_distribution():
    """setuptools installs the packages pyproject.toml lists, not their subpackages: a new package folder left out
    of the list is missing from the wheel (and only the slow tiers, which install it, would say so)."""
    listed = {
        *tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"],
        *tomllib.loads((REPO / "clients/python/pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
            "packages"
        ],
    }
    assert listed == {name for name, path in MODULES.items() if path.name == "__init__.py"}


# --- each name from its one defining module --------------------------------------------------------------------


def defined_names(path: Path) -> set[str]:
    """What a module defines at its top level (in `if` and `try` blocks too): functions, classes, assignments."""
    names: set[str] = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {each.id for target in targets for each in ast.walk(target) if isinstance(each, ast.Name)}
        elif isinstance(node, ast.If | ast.Try):
            body += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            body += [each for handler in getattr(node, "handlers", []) for each in handler.body]
    return names


def _module_name(path: Path) -> str:
    """A file's module name as its importers write it (lambda_src/ and clients/python/ are on the path)."""
    relative = path.relative_to(REPO)
    for root in ("lambda_src", "clients/python", "tests/unit", "tests"):
        if relative.is_relative_to(root):
            relative = relative.relative_to(root)
            break
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def every_import() -> list[tuple[Path, str, str | None, ast.stmt]]:
    """(file, module, name, statement) for every import of every Python file of the repository."""
    return [
        (path, module, name, statement)
        for path in python_files()
        for module, name, statement in imported_names(_module_name(path), path)
    ]


IMPORTS = every_import()


def _shown(path: Path) -> str:
    """A file as a report names it: from the repository's root (a planted one from its package's folder)."""
    return str(path.relative_to(REPO) if path.is_relative_to(REPO) else path.relative_to(path.parents[1]))


def taken_from_elsewhere(imports: list[tuple[Path, str, str | None, ast.stmt]], found: dict[str, Path]) -> set[str]:
    """`from M import N` of a product module M that does not define N (nor is N a submodule of M): a name passed on,
    with two import paths. A package's `__init__.py` may pass names on: that is its public API."""
    defined = {name: defined_names(path) for name, path in found.items() if path.name != "__init__.py"}
    return {
        f"{_shown(path)}: from {module} import {name}"
        for path, module, name, _ in imports
        if module in defined and name is not None and name not in defined[module] and f"{module}.{name}" not in found
    }


def test_each_name_is_imported_from_the_module_that_defines_it():
    assert sorted(taken_from_elsewhere(IMPORTS, MODULES)) == []


def private_imports(imports: list[tuple[Path, str, str | None, ast.stmt]], ours: set[str]) -> set[str]:
    """`from M import _name` of a module M of ours (product, bench, tools, tests) in another file: a name used
    outside its module is public in fact, so it is named as such (beside what it serves) or moved where it is used."""
    return {
        f"{_shown(path)}: from {module} import {name}"
        for path, module, name, _ in imports
        if module in ours
        and name is not None
        and name.startswith("_")
        and not name.startswith("__")
        and f"{module}.{name}" not in ours
    }


def test_no_module_imports_another_ones_private_name():
    assert sorted(private_imports(IMPORTS, {_module_name(path) for path in python_files()})) == []


def test_the_private_import_check_sees_one(tmp_path):
    planted = _planted(tmp_path, {"inner": "_hidden = 1\nshown = 2\n", "user": "from .inner import _hidden, shown\n"})
    imports = [
        (path, module, name, st) for found, path in planted.items() for module, name, st in imported_names(found, path)
    ]
    assert private_imports(imports, set(planted)) == {"planted/user.py: from planted.inner import _hidden"}


def passed_on(found: dict[str, Path]) -> set[str]:
    """Names a module (not a package's `__init__.py`) marks for others to take from it: `import x as x`, or an
    `__all__` naming what it imported."""
    marked = set()
    for name, path in found.items():
        if path.name == "__init__.py":
            continue
        for _, alias_name, statement in imported_names(name, path):
            for alias in getattr(statement, "names", []):
                if alias.asname is not None and alias.asname == alias.name.split(".")[-1] and alias.name == alias_name:
                    marked.add(f"{name}: {alias.name} as {alias.asname}")
        exported = _all_of(path)
        marked |= {f"{name}: __all__ names {each}" for each in exported - defined_names(path)}
    return marked


def _all_of(path: Path) -> set[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {ast.literal_eval(each) for each in getattr(node.value, "elts", [])}
    return set()


def test_no_module_passes_on_what_it_imported():
    assert sorted(passed_on(MODULES)) == []


def test_the_name_checks_see_a_name_passed_on(tmp_path):
    planted = _planted(
        tmp_path,
        {
            "__init__": "from .inner import Thing\n__all__ = ['Thing']\n",
            "inner": "Thing = 1\ndef helper(): ...\n",
            "layer": "from planted.inner import Thing as Thing\nfrom .inner import helper\n__all__ = ['helper']\n",
            "user": "from planted.layer import Thing\nfrom planted import Thing as Same\n"
            "from planted.inner import helper\n",
        },
    )
    imports = [
        (path, module, name, statement)
        for module_name, path in planted.items()
        for module, name, statement in imported_names(module_name, path)
    ]
    assert taken_from_elsewhere(imports, planted) == {"planted/user.py: from planted.layer import Thing"}
    assert passed_on(planted) == {"planted.layer: Thing as Thing", "planted.layer: __all__ names helper"}


# --- a package with one public API --------------------------------------------------------------------------


def entered_past_the_api(imports: list[tuple[Path, str, str | None, ast.stmt]], found: dict[str, Path]) -> set[str]:
    """Imports of a ONE_PUBLIC_API package's submodules from a file outside it."""
    entered = set()
    for path, module, name, _ in imports:
        needed = dependency(module, name, found)
        for package in ONE_PUBLIC_API & set(found):
            inside = path.is_relative_to(found[package].parent)
            if needed.startswith(f"{package}.") and not inside:
                entered.add(f"{_shown(path)}: {needed}")
    return entered


def test_a_package_with_one_public_api_is_entered_only_through_it():
    assert sorted(entered_past_the_api(IMPORTS, MODULES)) == []


def test_a_public_api_exports_only_what_others_use():
    for package in ONE_PUBLIC_API:
        root = MODULES[package].parent
        used = {name for path, module, name, _ in IMPORTS if module == package and not path.is_relative_to(root)}
        assert sorted(_all_of(MODULES[package]) - used) == [], f"{package} exports names no one outside it imports"


def test_the_api_check_sees_a_submodule_entered(tmp_path, monkeypatch):
    planted = _planted(tmp_path, {"__init__": "from .inner import Thing\n", "inner": "Thing = 1\n"})
    outside = tmp_path / "outside" / "user.py"
    outside.parent.mkdir()
    outside.write_text("from planted.inner import Thing\nfrom planted import inner\nfrom planted import Thing\n")
    monkeypatch.setattr(sys.modules[__name__], "ONE_PUBLIC_API", {"planted"})
    imports = [(outside, module, name, statement) for module, name, statement in imported_names("user", outside)]
    assert entered_past_the_api(imports, planted) == {"outside/user.py: planted.inner"}  # twice: once reported


WORK_ITEM = re.compile(r"issue #?[0-9]+", re.IGNORECASE)
OTHER_PROJECTS = re.compile(r"their issue #[0-9]+")  # another project's tracker, named as theirs


def work_item_citations(paths: list[Path], root: Path = REPO) -> list[str]:
    """Lines that cite a work item by number (WORK_ITEM): a reader of the repository has no such list."""
    found = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        cited = (n for n, line in enumerate(lines, 1) if WORK_ITEM.search(OTHER_PROJECTS.sub("", line)))
        found += [f"{path.relative_to(root)}:{n}" for n in cited]
    return found


def test_code_tests_and_docs_cite_docs_and_tests_not_work_item_numbers():
    assert work_item_citations(repository_files()) == []


def test_the_work_item_check_sees_one_and_passes_another_projects(tmp_path):
    planted = tmp_path / "planted.py"
    cited = "issue" + " 36"  # written apart, so that this file cites none
    planted.write_text(f"# as {cited} asked\n# Powertools shipped without it (their issue #7689)\n")
    assert work_item_citations([planted], tmp_path) == ["planted.py:1"]
