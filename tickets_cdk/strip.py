"""The Lambda asset's Python files without comments, docstrings and the annotations of function signatures: about
a third of the package's bytes, and none of its behaviour (the source in lambda_src/ keeps them). A signature's
annotations are strings the function never reads (`from __future__ import annotations`; nothing in the package
asks for type hints at run time); those of classes stay (dataclasses and TypedDicts read theirs).

Every line stays where it was: a removed docstring leaves blank lines (or `pass`, where it was a body's only
statement), a removed comment leaves its line's code. So a line number in a traceback from the deployed
function (CloudWatch) points at the same line of the source of that version, and the line the traceback quotes
is that line's code. Kept: an encoding declaration and a `#!` line (the first two lines' comments that mean
something to Python). The code itself is never rewritten: only whole comments, whole string statements and a
signature's `: annotation` and `-> annotation` that sit on one line go (a traceback quotes `def f(key):` for
`def f(key: str) -> int:`), and the blanks that begin a line shrink: one a block level, where a statement
begins, and none where a line continues one (inside brackets, after a backslash). A traceback quotes a line
without its leading blanks, so it quotes the same line (Python 3.13+ quotes a statement over several lines whole:
there its continuation lines show without their blanks); a line that begins inside a string keeps them (they are
the string's). That took 1.1 KB off the zipped asset, room the function needed.

Each result is checked before it is used: its syntax tree is the source's with exactly those statements and
annotations removed, every remaining node on its original line. A file that fails the check (it never did for
this package) stops synthesis with the file's name, rather than ship code that differs.

Standard library only (ast, tokenize): the result is the same for the same source on every Python from 3.11
(tests/unit/test_strip.py holds a reference file's exact result).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeGuard

# Python 3.12+ tokenizes an f-string as several tokens, from FSTRING_START to FSTRING_END, and 3.14 a t-string
# likewise (TSTRING_*); an older Python has none of them (one STRING token).
_STRING_STARTS = {getattr(tokenize, name) for name in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, name)}
_STRING_ENDS = {getattr(tokenize, name) for name in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, name)}
# PEP 263: a comment on line 1 or 2 matching this declares the file's encoding.
_ENCODING_DECLARATION = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


class StripError(ValueError):
    """A file whose stripped form would not be the same program, line for line (never seen: see the module)."""


@dataclass(frozen=True)
class _Docstring:
    """A string statement to remove: where it starts and ends (1-based lines, character columns), and whether a
    `pass` takes its place (the only statement of its body, or sharing a line with code)."""

    node: ast.Expr
    start: tuple[int, int]
    end: tuple[int, int]
    as_pass: bool


def strip_source(source: str, filename: str = "<source>") -> str:
    """`source` without comments and string statements (docstrings), each line on its original line number."""
    lines = _lines(source)
    tree = ast.parse(source, filename)
    tokens = list(tokenize.generate_tokens(io.StringIO(source, newline="").readline))
    docstrings = [found for found in _docstrings(tree, lines) if found is not None]
    annotations = list(_annotations(tree, lines))
    edits = [
        *_comment_edits(tokens, lines),
        *(_docstring_edit(found, lines) for found in docstrings),
        *(_annotation_edit(found, lines) for found in annotations),
    ]
    applied = _lines(_apply(lines, edits))
    # Fewer lines than the source's: lines moved (which _check refuses), or a last line without a line break was
    # emptied. Either way the rows no longer match the source's tokens, so nothing is reindented.
    stripped = _reindent(applied, tokens) if len(applied) == len(lines) else "".join(applied)
    _check(_without(tree, docstrings, annotations), stripped, filename)
    return stripped


def strip_python_file(data: bytes, filename: str = "<source>") -> bytes:
    """A Python file's bytes, stripped, in the encoding it declares (UTF-8 unless it declares another)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    bom = text.startswith("\ufeff")
    stripped = strip_source(text.removeprefix("\ufeff"), filename)
    return (("\ufeff" if bom else "") + stripped).encode(encoding)


def _lines(source: str) -> list[str]:
    """The source's lines as Python counts them (ends \\n, \\r\\n or \\r; str.splitlines also splits at other
    characters, which a string literal may hold)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", source)


def _bodies(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every list of statements in the tree: the module's, and every class', function's and block's (`else`,
    `finally`, `except` and `case` blocks included). Statements only nest in statements' lists."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                if children and isinstance(children[0], ast.stmt):
                    yield children
                pending.extend(children)


def _is_string_statement(statement: ast.stmt) -> TypeGuard[ast.Expr]:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _docstrings(tree: ast.AST, lines: list[str]) -> Iterator[_Docstring | None]:
    """Each string statement that can go without moving a line (None for one that cannot: it is kept)."""
    for body in _bodies(tree):
        only_strings = all(_is_string_statement(statement) for statement in body)
        for index, statement in enumerate(body):
            if _is_string_statement(statement):
                yield _locate(statement, lines, alone_in_body=only_strings and index == 0)


def _column(lines: list[str], line: int, utf8_offset: int) -> int:
    """ast's columns count UTF-8 bytes; the text's count characters."""
    return len(lines[line - 1].encode("utf-8")[:utf8_offset].decode("utf-8"))


def _locate(statement: ast.Expr, lines: list[str], alone_in_body: bool) -> _Docstring | None:
    assert statement.end_lineno is not None and statement.end_col_offset is not None  # ast.parse sets them
    start = (statement.lineno, _column(lines, statement.lineno, statement.col_offset))
    end = (statement.end_lineno, _column(lines, statement.end_lineno, statement.end_col_offset))
    before = lines[start[0] - 1][: start[1]]
    after = lines[end[0] - 1][end[1] :]
    if after.strip() and not after.lstrip().startswith("#"):
        return None  # code follows on its last line (`"""..."""; x = 1`): removing it would move that code up
    return _Docstring(statement, start, end, as_pass=alone_in_body or bool(before.strip()))


def _docstring_edit(found: _Docstring, lines: list[str]) -> tuple[tuple[int, int], tuple[int, int], str]:
    """The statement's text replaced by `pass` or nothing, plus the line breaks it spanned."""
    breaks = "\n" * (found.end[0] - found.start[0])
    if found.as_pass:
        return found.start, found.end, "pass" + breaks
    return (found.start[0], 0), found.end, breaks  # its indentation goes too: the line is left empty


@dataclass(frozen=True)
class _Annotation:
    """A signature's annotation to remove: the node holding it (an argument or the function), its field, and the
    column on the annotation's line where the removal starts (after the argument's name; the blanks before `->`)."""

    owner: ast.arg | ast.FunctionDef | ast.AsyncFunctionDef
    field: str  # "annotation" (an argument's) or "returns" (the function's)
    cut_from: int


def _annotations(tree: ast.AST, lines: list[str]) -> Iterator[_Annotation]:
    """Each annotation of a function's arguments and result that sits on one line with its argument (or `->`),
    in the order ast.walk meets them (the same for the same source: _without finds the same ones)."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = node.args
        extra = [found for found in (arguments.vararg, arguments.kwarg) if found is not None]
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, *extra]:
            annotation = argument.annotation
            if annotation is not None and argument.lineno == annotation.lineno == annotation.end_lineno:
                name_end = _column(lines, argument.lineno, argument.col_offset) + len(argument.arg)
                yield _Annotation(argument, "annotation", name_end)
        returns = node.returns
        arrow = _arrow(returns, lines) if returns is not None and returns.lineno == returns.end_lineno else None
        if arrow is not None:
            yield _Annotation(node, "returns", arrow)


def _arrow(returns: ast.expr, lines: list[str]) -> int | None:
    """The column where the blanks before a result annotation's `->` start, if the `->` is on its line."""
    line, start = lines[returns.lineno - 1], _column(lines, returns.lineno, returns.col_offset)
    arrow = line.rfind("->", 0, start)
    if arrow < 0 or line[arrow + 2 : start].strip():
        return None
    return len(line[:arrow].rstrip())


def _annotation_edit(found: _Annotation, lines: list[str]) -> tuple[tuple[int, int], tuple[int, int], str]:
    """`name: annotation` to `name`; `) -> annotation:` to `):`."""
    annotation = getattr(found.owner, found.field)
    assert annotation.end_lineno is not None and annotation.end_col_offset is not None  # ast.parse sets them
    end = (annotation.end_lineno, _column(lines, annotation.end_lineno, annotation.end_col_offset))
    return (annotation.lineno, found.cut_from), end, ""


def _comment_edits(
    tokens: list[tokenize.TokenInfo], lines: list[str]
) -> Iterator[tuple[tuple[int, int], tuple[int, int], str]]:
    """Each comment, with the blanks before it, except the lines Python reads (encoding, `#!`)."""
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        row, column = token.start
        if row <= 2 and (_ENCODING_DECLARATION.match(token.string) or (row == 1 and token.string.startswith("#!"))):
            continue
        code = lines[row - 1][:column]
        yield (row, len(code.rstrip())), token.end, ""


def _apply(lines: list[str], edits: list[tuple[tuple[int, int], tuple[int, int], str]]) -> str:
    """The text with each edit (start, end, replacement) made. An edit inside another (a comment between the
    parenthesised parts of a removed docstring) is dropped: the outer one removes it."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    spans = sorted((offsets[start[0] - 1] + start[1], offsets[end[0] - 1] + end[1], new) for start, end, new in edits)
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    text = "".join(lines)
    for start, end, new in reversed(kept):  # the last first, so the earlier offsets still hold
        text = text[:start] + new + text[end:]
    return text


def _reindent(lines: list[str], tokens: list[tokenize.TokenInfo]) -> str:
    """The stripped `lines` with each statement's line indented one blank a block level, each line that continues
    a statement not at all, and each line that begins inside a string as it was. `tokens`: the source's, whose
    lines the stripped ones are (a statement begins on the same line in both; a line the stripping emptied stays
    empty)."""
    widths, in_string = _indentation(tokens)
    for row, blanks in widths.items():
        if row not in in_string and lines[row - 1].strip():
            lines[row - 1] = " " * blanks + lines[row - 1].lstrip(" \t\f")
    return "".join(lines)


def _indentation(tokens: list[tokenize.TokenInfo]) -> tuple[dict[int, int], set[int]]:
    """The new indentation of each line where a token begins (its block's depth where a statement begins, none
    where one continues), and the lines that begin inside a string."""
    widths: dict[int, int] = {}
    in_string: set[int] = set()
    depth, statement_begins, open_strings = 0, True, []
    for token in tokens:
        kind, row, end_row = token.type, token.start[0], token.end[0]
        if kind in (tokenize.INDENT, tokenize.DEDENT):
            depth += 1 if kind == tokenize.INDENT else -1
        elif kind == tokenize.NEWLINE:
            statement_begins = True
        elif kind not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            widths.setdefault(row, depth if statement_begins else 0)
            statement_begins = False
            if kind in _STRING_STARTS:
                open_strings.append(row)
            elif kind == tokenize.STRING or kind in _STRING_ENDS:
                began = row if kind == tokenize.STRING else open_strings.pop()
                in_string.update(range(began + 1, end_row + 1))
    return widths, in_string


def _check(expected: ast.Module, stripped: str, filename: str) -> None:
    """The stripped text parses to the expected tree (_without's), each node on its line."""
    try:
        got = ast.parse(stripped, filename)
    except SyntaxError as error:
        message = f"{filename}: stripping comments, docstrings and annotations broke the syntax: {error}"
        raise StripError(message) from error
    if not _alike(got, expected):
        raise StripError(
            f"{filename}: stripping comments, docstrings and annotations would change the code or move its lines"
        )


def _without(tree: ast.Module, removed: list[_Docstring], annotations: list[_Annotation]) -> ast.Module:
    """The source's `tree`, changed in place to what the stripped text must parse to: the removed statements gone
    (a `pass` on the same line where one takes the place), and the removed annotations with them."""
    as_pass = {(found.node.lineno, found.node.col_offset): found.as_pass for found in removed}
    for annotation in annotations:
        setattr(annotation.owner, annotation.field, None)
    for body in list(_bodies(tree)):
        kept: list[ast.stmt] = []
        for statement in body:
            position = (statement.lineno, statement.col_offset)
            if not _is_string_statement(statement) or position not in as_pass:
                kept.append(statement)
            elif as_pass[position]:
                kept.append(ast.Pass(lineno=statement.lineno, col_offset=statement.col_offset))
        body[:] = kept
    return tree


def _alike(got: object, expected: object) -> bool:
    """Two trees alike node for node: each node's type, fields and line number (what comparing their ast.dump and
    the line of every node says, in one walk; columns may differ: the indentation shrank)."""
    pending = [(got, expected)]
    while pending:
        one, other = pending.pop()
        if type(one) is not type(other):
            return False
        if isinstance(one, ast.AST):
            if getattr(one, "lineno", None) != getattr(other, "lineno", None):
                return False
            pending.extend((getattr(one, name, None), getattr(other, name, None)) for name in one._fields)
        elif isinstance(one, list):
            if len(one) != len(other):  # type: ignore[arg-type]  # the same type: a list
                return False
            pending.extend(zip(one, other))  # type: ignore[call-overload]
        elif one != other:
            return False
    return True
