"""No refusal starts a sentence in lower case after ". ": the style check, and every refusal the product's source
writes (the HTTP errors, and the config's, the ledger's and predeploy's), read from the source: each call of a
refusal class (one of REFUSALS or a class built on one) and each problem a check collects (`problems.append(...)`,
which a refusal joins), its text with each interpolated value taken as a word that starts in upper case (a
module's string constant and its `.format` read as written)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from repository_files import REPO, python_files

from common import lowercase_sentence_starts

REFUSALS = {"TicketsError", "SeriesConfigError", "AccessRuleError", "ConfigError", "LedgerError", "PredeployError"}
PRODUCT = [path for path in python_files() if path.relative_to(REPO).parts[0] not in ("tests", "examples")]


def refusal_classes(trees: list[ast.Module]) -> set[str]:
    """REFUSALS and every class whose bases include one, to the last generation."""
    classes = [node for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    found = set(REFUSALS)
    while grown := {
        node.name for node in classes if node.name not in found and any(_name(base) in found for base in node.bases)
    }:
        found |= grown
    return found


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _text(node: ast.expr, constants: dict[str, str]) -> str | None:
    """A message's text as written: a value in braces is `Value`; None for a message that is not written here."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part, constants) or "Value" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, constants), _text(node.right, constants)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        written = _text(node.func.value, constants)
        return None if written is None else re.sub(r"\{[^{}]*\}", "Value", written)
    return None


def _constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level string constants (`_IN_PROGRESS = "..."`)."""
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _is_message(node: ast.AST, classes: set[str]) -> bool:
    """A refusal's construction, or a problem appended to the list a refusal joins."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    appended = isinstance(node.func, ast.Attribute) and node.func.attr == "append"
    return _name(node.func) in classes or (appended and _name(node.func.value) == "problems")


def refusal_messages(paths: list[Path]) -> dict[str, str]:
    """`file:line` -> the text of each refusal's message the files write."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in paths}
    classes = refusal_classes(list(trees.values()))
    return {
        f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{node.lineno}": text
        for path, tree in trees.items()
        for node in ast.walk(tree)
        if _is_message(node, classes) and (text := _text(node.args[0], _constants(tree))) is not None
    }


def test_no_refusal_of_the_product_starts_a_sentence_in_lower_case():
    messages = refusal_messages(PRODUCT)
    assert len(messages) > 100  # the check reads the refusals (the handler's, the config's, the ledger's, ...)
    found = {where: starts for where, text in messages.items() if (starts := lowercase_sentence_starts(text))}
    assert found == {}


def test_the_source_check_reads_subclasses_interpolations_and_joined_strings(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "class Refused(TicketsError): ...\n"
        "class Later(Refused): ...\n"
        "raise Later(f'the ledger says {n}. every lane' ' moves')\n"
        "raise ConfigError('fine. ' + 'Every lane')\n"
        "raise ConfigError(f'{reason}. {more}')\n"
        "raise ValueError('not a refusal. at all')\n"
        "WHY = 'a constant. read {how}'\n"
        "problems.append(WHY.format(how=1))\n",
        encoding="utf-8",
    )
    messages = refusal_messages([planted])
    assert messages == {
        "planted.py:3": "the ledger says Value. every lane moves",
        "planted.py:4": "fine. Every lane",
        "planted.py:5": "Value. Value",
        "planted.py:8": "a constant. read Value",
    }
    assert lowercase_sentence_starts(messages["planted.py:3"]) == ["the ledger says Value. every"]


def test_a_sentence_starting_in_lower_case_is_found():
    message = "counters.orders.start: the ledger records 300, cdk.json says 301. every lane's first ticket moves"
    assert lowercase_sentence_starts(message) == ["records 300, cdk.json says 301. every"]
    assert lowercase_sentence_starts("Nothing was issued. ask for fewer") == ["Nothing was issued. ask"]


def test_identifiers_quoted_values_commands_and_abbreviations_are_not_sentences():
    for message in (
        "the ledger records 1, cdk.json says 2. Every lane moves",
        "cdk.json says 2. cdk.json is read, tickets_admin raise. `make init` writes one.",
        "invalid key 'a. b': keep it; \"x. y\" as written",
        "a field, e.g. start, i.e. the first; and so on, etc. and more... and more",
    ):
        assert lowercase_sentence_starts(message) == [], message
