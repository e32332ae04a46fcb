"""The house's shape (CONTRIBUTING.md, Layout), held so that it stays: the packages build on each other in one
direction (the Lambda's `tickets` on nothing of ours; the deploy side on it; the construct library, the admin
CLI and the local server on those), no module imports another that imports it back, and no product module
grows past 400 lines (split it along its seams instead). Read from the source, imports at module level."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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
    "tickets_local": {"tickets", "tickets_deploy", "tickets_admin"},
    "tickets_client": set(),  # a distribution of its own (clients/python)
}
MAX_MODULE_LINES = 400


def modules() -> dict[str, Path]:
    found = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_at_module_level(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours `name` imports when it is imported (not inside functions, nor for type checking)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    imported = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            imported |= {module, *(f"{module}.{alias.name}" for alias in node.names)}
    return imported & known


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_at_module_level(name, path, set(found)) - {name} for name, path in found.items()}


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
        for name, path in modules().items()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these along their seams: {long}"


def test_the_checks_see_a_cycle_and_every_module():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    found = import_graph()
    assert {"tickets.app", "tickets.series.store", "tickets_deploy.schema", "tickets_cdk.service"} <= set(found)
    assert "tickets.routes" in found["tickets.app"] and "tickets_deploy.field" in found["tickets_deploy.schema"]
