"""The Lambda asset's Python files without comments, docstrings and signatures' annotations (tickets_cdk/strip.py,
tickets_cdk/asset.py): the same program, every line where the source has it, within the asset's size goal. That
the handler behaves the same on the stripped asset is tests/functional/test_asset.py's; that CDK hashes it the
same, tests/synth's."""

from __future__ import annotations

import ast
import inspect
import io
import re
import shutil
import sys
import tokenize
import types
from pathlib import Path

import pytest

from bench.package import zipped_bytes
from bench.report import GOALS
from tickets_cdk import strip
from tickets_cdk.asset import PACKAGE, asset_contents, asset_files
from tickets_cdk.strip import StripError, strip_python_file, strip_source

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "strip"
SOURCE = (REFERENCE / "reference.py.txt").read_text(encoding="utf-8")
MODULES = {name: path for name, path in asset_files().items() if name.endswith(".py")}


@pytest.fixture(scope="module")
def stripped_modules() -> dict[str, str]:
    contents = asset_contents()
    return {name: contents[name].decode("utf-8") for name in MODULES}


def test_the_reference_file_strips_to_its_recorded_result():
    # Every case the stripping decides (a docstring alone in its body, on its header's line, between parentheses
    # with a comment, code after it on its line, strings that hold '#', the lines Python reads) in one file. Its
    # exact result is recorded: CI runs this on every Python the package supports, so each gives the same bytes.
    assert strip_source(SOURCE) == (REFERENCE / "reference.stripped.txt").read_text(encoding="utf-8")


def _run_reference(text: str) -> dict[str, object]:
    module = types.ModuleType("reference")
    sys.modules["reference"] = module  # a dataclass looks its module up (string annotations)
    try:
        exec(compile(text, "reference.py", "exec"), module.__dict__)
    finally:
        del sys.modules["reference"]
    ns = module.__dict__
    return {
        "method": ns["Documented"]().method(),
        "empty": ns["Empty"].__mro__[1:],
        "one_liner": ns["one_liner"](),
        "after_header": ns["after_header"](),
        "code_after": ns["code_after"](1),
        "implicit": ns["implicit"](),
        "blocks": [ns["blocks"](True), ns["blocks"](False)],
        "matched": [ns["matched"](1), ns["matched"](2)],
        "continued": [ns["continued"](True), ns["continued"](False)],
        "text": ns["TEXT"],
        "hash": ns["HASH"],
        "doc": ns["doc_reader"](),
        "annotated": ns["annotated"]("k", "a", count=2, z=1),
        "spread": ns["spread"](1, [2]),
        "point": (ns["Point"]().moved(2).x, ns["field_names"]()),
        "signature": str(inspect.signature(ns["annotated"])).replace("'", ""),
    }


def test_the_reference_file_does_the_same_stripped_but_for_its_docstrings():
    source, stripped = _run_reference(SOURCE), _run_reference(strip_source(SOURCE))
    assert source.pop("doc") == "a docstring on the header's line" and stripped.pop("doc") is None
    assert source.pop("signature") == "(key: str, *parts: str, count: int = 1, **extra: object) -> dict[str, object]"
    assert stripped.pop("signature") == "(key, *parts, count=1, **extra)"
    assert stripped == source
    assert stripped["text"].splitlines()[1].endswith("too   ")  # a string's '#' and trailing blanks are its own
    assert stripped["continued"][0].splitlines()[1].startswith("    a multi-line")  # and its leading blanks


def _string_statement_lines(tree: ast.AST) -> set[int]:
    return {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _lines_that_run(code: types.CodeType) -> set[tuple[str, int]]:
    found = {(code.co_qualname, line) for _, _, line in code.co_lines() if line}  # 0: a code object's RESUME
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found |= _lines_that_run(constant)
    return found


_TOKEN = re.compile(r"\w+|\S")


def _is_the_line_less_annotations(quoted: str, source: str) -> bool:
    """`quoted` begins the source's line, or is it with parts taken out (a signature's annotations): its tokens,
    in order, are the source's, the first one first."""
    if source.startswith(quoted):
        return True
    remaining = iter(_TOKEN.findall(source))
    tokens = _TOKEN.findall(quoted)
    return tokens[:1] == _TOKEN.findall(source)[:1] and all(token in remaining for token in tokens)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_line_of_the_asset_runs_where_the_source_has_it(name, stripped_modules):
    # What an operator needs of a traceback from the deployed function: its line number and the line it quotes
    # are the source's (lambda_src/, at the version deployed; a signature is quoted without its annotations).
    # Only the docstrings' own lines stop running (a class' or module's `__doc__ = ...`), and a `pass` that
    # replaced one runs on its line.
    source, stripped = MODULES[name].read_text(encoding="utf-8"), stripped_modules[name]
    docstrings = _string_statement_lines(ast.parse(source))
    ran, runs = _lines_that_run(compile(source, name, "exec")), _lines_that_run(compile(stripped, name, "exec"))
    assert {line for _, line in ran - runs} <= docstrings
    assert {line for _, line in runs - ran} <= docstrings
    source_lines, stripped_lines = source.splitlines(), stripped.splitlines()
    assert len(stripped_lines) == len(source_lines)
    for _, line in runs - {(qualname, line) for qualname, line in runs if line in docstrings}:
        quoted = stripped_lines[line - 1].strip()
        assert quoted and _is_the_line_less_annotations(quoted, source_lines[line - 1].strip()), (name, line)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_asset_has_no_comment_nor_docstring(name, stripped_modules):
    stripped = stripped_modules[name]
    comments = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(stripped).readline)
        if token.type == tokenize.COMMENT
    ]
    assert comments == []
    tree = ast.parse(stripped)
    definitions = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    assert [node.name for node in ast.walk(tree) if isinstance(node, definitions) and ast.get_docstring(node)] == []
    assert ast.get_docstring(tree) is None
    assert _string_statement_lines(tree) == set()
    signatures = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    one_line = [  # an annotation over several lines stays (taking it out would move a line): none in the package
        ast.unparse(annotation)
        for node in signatures
        for annotation in [node.returns, *(argument.annotation for argument in _arguments(node.args))]
        if annotation is not None
    ]
    assert one_line == []


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    extra = [found for found in (arguments.vararg, arguments.kwarg) if found is not None]
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, *extra]


def test_the_zipped_asset_is_within_its_goal_and_a_quarter_smaller_than_the_source():
    stripped = zipped_bytes(asset_contents())
    source = zipped_bytes({name: path.read_bytes() for name, path in asset_files().items()})
    assert stripped <= GOALS["package_bytes"]
    assert stripped < source * 0.75


def test_the_asset_depends_only_on_the_package_not_where_it_is(tmp_path):
    copy = shutil.copytree(PACKAGE, tmp_path / "elsewhere" / "tickets", ignore=shutil.ignore_patterns("__pycache__"))
    assert asset_contents(copy) == asset_contents()
    assert set(asset_contents()) == set(asset_files())  # every file, py.typed too


def test_the_lines_python_reads_stay_and_the_encoding_is_kept():
    source = '#!/usr/bin/env python3\n# -*- coding: latin-1 -*-\n"""Caf\xe9."""\nNAME = "caf\xe9"  # caf\xe9\n'
    stripped = strip_python_file(source.encode("latin-1"))
    assert stripped.decode("latin-1") == '#!/usr/bin/env python3\n# -*- coding: latin-1 -*-\n\nNAME = "caf\xe9"\n'
    with_bom = strip_python_file(b'\xef\xbb\xbf"""Doc."""\nX = 1  # one\n')
    assert with_bom == b"\xef\xbb\xbf\nX = 1\n"


def test_a_stripping_that_would_move_a_line_stops_the_build_naming_the_file(monkeypatch):
    def without_its_line_breaks(found, lines):
        start, end, replacement = edit(found, lines)
        return start, end, replacement.replace("\n", "")

    edit = strip._docstring_edit
    monkeypatch.setattr(strip, "_docstring_edit", without_its_line_breaks)
    with pytest.raises(StripError, match=r"^tickets/x\.py: .* move its lines"):
        strip_source('"""Two\nlines."""\nX = 1\n', "tickets/x.py")
    assert strip_source('"""One line."""\nX = 1\n') == "\nX = 1\n"  # moves nothing: accepted


def test_a_stripping_that_would_break_the_syntax_stops_the_build(monkeypatch):
    monkeypatch.setattr(strip, "_docstring_edit", lambda found, lines: ((found.start[0], 0), found.end, ""))
    with pytest.raises(StripError, match=r"^tickets/y\.py: .* broke the syntax"):
        strip_source('class Empty:\n    """Only a docstring."""\n', "tickets/y.py")


def test_an_indentation_that_would_change_the_code_stops_the_build(monkeypatch):
    # A statement's line shrunk to a shallower block may still parse, as other code (here the function's last
    # statement moved out of it to the module): the check compares the trees, not only the syntax.
    source = "def f():\n    x = 1\n    return x\n"

    def last_line_at_the_top(tokens):
        widths, in_string = indentation(tokens)
        return {**widths, 3: 0}, in_string

    indentation = strip._indentation
    assert strip_source(source) == "def f():\n x = 1\n return x\n"
    monkeypatch.setattr(strip, "_indentation", last_line_at_the_top)
    with pytest.raises(StripError, match=r"^tickets/z\.py: .* change the code"):
        strip_source(source, "tickets/z.py")


@pytest.mark.parametrize(
    ("source", "other"),
    [
        ("x = 1\n", "x = 2\n"),  # a value
        ("x = 1\n", "x = True\n"),  # a value equal, of another type
        ("x = 1\n", "y = 1\n"),  # a name
        ("x = [1, 2]\n", "x = [1]\n"),  # a list's length
        ("x = 1\ny = 2\n", "x = 1\n\ny = 2\n"),  # a line
    ],
)
def test_the_check_tells_trees_apart_by_value_type_name_length_and_line(source, other):
    assert strip._alike(ast.parse(source), ast.parse(source))
    assert not strip._alike(ast.parse(other), ast.parse(source))
