"""DynamoDB in this process's memory, the `memory` backend (docs/reference/backends.md). A parameter or expression it
does not know is a ValidationException that names it, so a new call fails a test instead of passing wrongly."""

from __future__ import annotations

import functools
import operator
import re
import threading
from collections.abc import Callable
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError

Value = dict[str, Any]  # an attribute value as DynamoDB's JSON: {"N": "5"}, {"S": "orders"}
Item = dict[str, Value]
Operand = Callable[[Item, dict[str, str], Item], Value | None]  # (item, names, values) -> a value, None if absent
Condition = Callable[[Item, dict[str, str], Item], bool]
Comparison = Callable[[Value | None, Value | None], bool]

_TOKEN = re.compile(r"\s*(<>|<=|>=|[=<>(),+-]|[#:]?[A-Za-z_][\w]*)")
_EXPRESSION = re.compile(rf"(?:{_TOKEN.pattern})*+\s*")  # possessive: a failed match never re-splits a name
_KNOWN = frozenset(
    ("TableName", "Key", "Item", "ConditionExpression", "UpdateExpression", "ExpressionAttributeNames")
    + ("ExpressionAttributeValues", "ReturnValues", "ReturnValuesOnConditionCheckFailure", "ConsistentRead")
    + ("KeyConditionExpression", "Limit", "ExclusiveStartKey", "RequestItems")
)


def _error(code: str, message: str, operation: str, **answer: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}, **answer}, operation)


def _invalid(message: str, operation: str = "ExpressionEvaluation") -> ClientError:
    return _error("ValidationException", message, operation, ResponseMetadata={"HTTPStatusCode": 400})


def _number(text: str) -> int | Decimal:
    try:
        return int(text)
    except ValueError:
        return Decimal(text)


def _comparable(value: Value) -> tuple[str, Any]:
    ((kind, raw),) = value.items()
    return kind, _number(raw) if kind == "N" else raw


def _ordering(compare: Callable[[Any, Any], bool]) -> Comparison:
    """False unless both values exist and are numbers, or strings."""

    def comparison(left: Value | None, right: Value | None) -> bool:
        if left is None or right is None:
            return False
        (left_kind, left_value), (right_kind, right_value) = _comparable(left), _comparable(right)
        return left_kind == right_kind and left_kind in ("N", "S") and compare(left_value, right_value)

    return comparison


def _equal(left: Value | None, right: Value | None) -> bool:
    """Equal values of one kind; a number's text compared as the number (every lane condition asks: cheap first)."""
    if left is None or right is None:
        return False
    return left == right or ("N" in left and "N" in right and _number(left["N"]) == _number(right["N"]))


_ORDERINGS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_COMPARISONS = {name: _ordering(compare) for name, compare in _ORDERINGS.items()}
_COMPARISONS |= {"=": _equal, "<>": lambda left, right: not _equal(left, right)}


def _name(token: str, names: dict[str, str]) -> str:
    return names[token] if token.startswith("#") else token


_JOINED: dict[str, Callable[[Condition, Condition], Condition]] = {
    "OR": lambda left, right: lambda *item: left(*item) or right(*item),
    "AND": lambda left, right: lambda *item: left(*item) and right(*item),
}


class _Parser:
    """Condition and update expressions, as far as Tickets and Powertools write them."""

    def __init__(self, text: str):
        if not _EXPRESSION.fullmatch(text):
            raise _invalid(f"the memory backend cannot read {text!r}")
        self.tokens: list[str] = _TOKEN.findall(text)
        self.at = 0

    def accept(self, *words: str) -> str:
        """The next token, taken, if it is one of `words` (upper-cased); else ""."""
        token = self.tokens[self.at].upper() if self.at < len(self.tokens) else ""
        if token not in words:
            return ""
        self.at += 1
        return token

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.at] if self.at < len(self.tokens) else ""
        if expected is not None and token.upper() != expected or not token:
            raise _invalid(f"the memory backend expected {expected or 'more'} at {token!r} in {self.tokens}")
        self.at += 1
        return token

    def condition(self, joined_by: str = "OR") -> Condition:
        """Terms joined by OR, each of them terms joined by AND (which binds tighter)."""
        part: Callable[[], Condition] = (lambda: self.condition("AND")) if joined_by == "OR" else self.term
        joined = part()
        while self.accept(joined_by):
            joined = _JOINED[joined_by](joined, part())
        return joined

    def term(self) -> Condition:
        if self.accept("NOT"):
            negated = self.term()
            return lambda *item: not negated(*item)
        if self.accept("("):
            inner = self.condition()
            self.take(")")
            return inner
        if found := self.accept("ATTRIBUTE_EXISTS", "ATTRIBUTE_NOT_EXISTS"):
            exists = found == "ATTRIBUTE_EXISTS"
            self.take("(")
            path = self.operand()
            self.take(")")
            return lambda *item: (path(*item) is not None) == exists
        left = self.operand()
        if self.accept("BETWEEN"):  # `a BETWEEN low AND high`: the AND is the BETWEEN's, taken here
            low, _, high = self.operand(), self.take("AND"), self.operand()
            at_least, at_most = _COMPARISONS[">="], _COMPARISONS["<="]
            return lambda *item: at_least(left(*item), low(*item)) and at_most(left(*item), high(*item))
        comparison = _COMPARISONS.get(self.take())
        if comparison is None:
            raise _invalid(f"the memory backend knows no comparison {self.tokens[self.at - 1]!r}")
        right = self.operand()
        return lambda *item: comparison(left(*item), right(*item))

    def operand(self) -> Operand:
        """A value or an attribute; an undefined #name or :value is a KeyError (_write: a ValidationException)."""
        token = self.take()
        if token.startswith(":"):
            return lambda item, names, values: values[token]
        if token.startswith("#"):
            return lambda item, names, values: item.get(names[token])
        if token[0].isalpha():
            return lambda item, names, values: item.get(token)
        raise _invalid(f"the memory backend expected an attribute or a value at {token!r}")

    def value(self) -> Operand:
        """An update's value: an operand, if_not_exists(path, operand), or two of those added or subtracted."""
        left = self.if_not_exists()
        sign = {"+": 1, "-": -1}.get(self.accept("+", "-"))
        if sign is None:
            return left
        right = self.if_not_exists()
        return lambda *item: _add(left(*item), right(*item), sign)

    def if_not_exists(self) -> Operand:
        if not self.accept("IF_NOT_EXISTS"):
            return self.operand()
        self.take("(")
        path, _, default, _ = self.operand(), self.take(","), self.operand(), self.take(")")
        return lambda *item: path(*item) or default(*item)

    def update(self) -> tuple[list[tuple[str, Operand]], list[str]]:
        """(SET's (attribute token, value) pairs, REMOVE's attribute tokens)."""
        assigned: list[tuple[str, Operand]] = []
        removed: list[str] = []
        while self.at < len(self.tokens):
            clause = self.take().upper()
            if clause not in ("SET", "REMOVE"):
                raise _invalid(f"the memory backend knows SET and REMOVE, not {clause}")
            while True:
                target = self.take()
                if clause == "SET":
                    self.take("=")
                    assigned.append((target, self.value()))
                else:
                    removed.append(target)
                if not self.accept(","):
                    break
        return assigned, removed


def _add(left: Value | None, right: Value | None, sign: int) -> Value:
    if left is None or right is None or "N" not in left or "N" not in right:
        raise _invalid("The provided expression refers to an attribute that does not exist in the item", "UpdateItem")
    total = _number(left["N"]) + sign * _number(right["N"])
    return {"N": str(total if isinstance(total, int) or total != total.to_integral() else int(total))}


@functools.lru_cache(maxsize=256)
def _condition(text: str) -> Condition:
    parser = _Parser(text)
    condition = parser.condition()
    if parser.at != len(parser.tokens):
        raise _invalid(f"the memory backend cannot read {text!r} past {parser.tokens[parser.at]!r}")
    return condition


@functools.lru_cache(maxsize=256)
def _update(text: str) -> tuple[list[tuple[str, Operand]], list[str]]:
    return _Parser(text).update()


class _Table:
    def __init__(self, key_schema: list[dict[str, str]]):
        self.key_names = [key["AttributeName"] for key in sorted(key_schema, key=lambda key: key["KeyType"])]
        self.items: dict[tuple[Any, ...], Item] = {}  # by key: HASH first, then RANGE

    def key(self, item: Item, operation: str) -> tuple[Any, ...]:
        try:
            return tuple([_comparable(item[name]) for name in self.key_names])
        except KeyError:
            raise _invalid(f"One of the required keys was not given a value: {self.key_names}", operation) from None


class MemoryDynamoDB:
    """A botocore DynamoDB client's calls that Tickets makes, on tables held in memory (create_table makes one)."""

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}
        self._lock = threading.Lock()  # each call is atomic, as DynamoDB's writes to one item are

    def create_table(self, **request: Any) -> dict[str, Any]:
        self._tables.setdefault(request["TableName"], _Table(request["KeySchema"]))
        return {"TableDescription": {"TableName": request["TableName"], "TableStatus": "ACTIVE"}}

    def empty(self) -> None:
        with self._lock:
            for table in self._tables.values():
                table.items = {}

    def get_item(self, **request: Any) -> dict[str, Any]:
        table = self._table(request, "GetItem")
        item = table.items.get(table.key(request["Key"], "GetItem"))
        return {} if item is None else {"Item": dict(item)}

    def put_item(self, **request: Any) -> dict[str, Any]:
        return self._write("PutItem", request, request["Item"], lambda old: dict(request["Item"]))

    def delete_item(self, **request: Any) -> dict[str, Any]:
        return self._write("DeleteItem", request, request["Key"], lambda old: None)

    def update_item(self, **request: Any) -> dict[str, Any]:
        names = request.get("ExpressionAttributeNames", {})
        assigned, removed = _update(request.get("UpdateExpression", ""))

        def updated(old: Item | None) -> Item:
            item = {**(old or {}), **request["Key"]}
            values = request.get("ExpressionAttributeValues", {})
            item.update([(_name(target, names), value(old or {}, names, values)) for target, value in assigned])
            for target in removed:
                item.pop(_name(target, names), None)
            return item

        answer = self._write("UpdateItem", request, request["Key"], updated)
        if request.get("ReturnValues") in ("UPDATED_NEW", "UPDATED_OLD") and "Attributes" in answer:
            changed = {_name(target, names) for target, _ in assigned}
            answer["Attributes"] = {name: value for name, value in answer["Attributes"].items() if name in changed}
        return answer

    def batch_get_item(self, **request: Any) -> dict[str, Any]:
        responses = {}
        for name, asked in request["RequestItems"].items():
            found = (self.get_item(TableName=name, Key=key).get("Item") for key in asked["Keys"])
            responses[name] = [item for item in found if item is not None]
        return {"Responses": responses, "UnprocessedKeys": {}}

    def query(self, **request: Any) -> dict[str, Any]:
        table = self._table(request, "Query")
        matches = _condition(request["KeyConditionExpression"])
        names, values = request.get("ExpressionAttributeNames", {}), request.get("ExpressionAttributeValues", {})
        with self._lock:  # in key order: a journal is read by its numbers
            items = sorted((key, item) for key, item in table.items.items() if matches(item, names, values))
        if "ExclusiveStartKey" in request:
            after = table.key(request["ExclusiveStartKey"], "Query")
            items = [(key, item) for key, item in items if key > after]
        page = items[: request.get("Limit", len(items))]
        answer: dict[str, Any] = {"Items": [dict(item) for _, item in page], "Count": len(page)}
        if len(page) < len(items):
            answer["LastEvaluatedKey"] = {name: page[-1][1][name] for name in table.key_names}
        return answer

    def scan(self, **request: Any) -> dict[str, Any]:
        table = self._table(request, "Scan")
        with self._lock:
            items = [dict(item) for item in table.items.values()]
        return {"Items": items, "Count": len(items)}

    def get_paginator(self, operation: str) -> Any:  # the counters listing's: a scan in a single page
        if operation != "scan":
            raise _invalid(f"the memory backend has no paginator for {operation}")
        return SimpleNamespace(paginate=lambda **request: iter([self.scan(**request)]))

    def _table(self, request: dict[str, Any], operation: str) -> _Table:
        if not _KNOWN.issuperset(request):
            unknown = ", ".join(sorted(request.keys() - _KNOWN))
            raise _invalid(f"the memory backend does not implement {unknown}", operation)
        table = self._tables.get(request["TableName"])
        if table is None:
            raise _error("ResourceNotFoundException", "Requested resource not found", operation)
        return table

    def _write(
        self, operation: str, request: dict[str, Any], key_item: Item, change: Callable[[Item | None], Item | None]
    ) -> dict[str, Any]:
        """Check the request's condition on the item as it stands, then write `change(old)` (None: delete)."""
        table = self._table(request, operation)
        key = table.key(key_item, operation)
        condition = request.get("ConditionExpression")
        with self._lock:
            old = table.items.get(key)
            names, values = request.get("ExpressionAttributeNames", {}), request.get("ExpressionAttributeValues", {})
            try:
                if condition is not None and not _condition(condition)(old or {}, names, values):
                    asked = request.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
                    shown = {"Item": dict(old)} if old and asked else {}
                    raise _error(
                        "ConditionalCheckFailedException", "The conditional request failed", operation, **shown
                    )
                new = change(old)
            except KeyError as undefined:
                raise _invalid(f"An expression attribute name or value is undefined: {undefined}", operation) from None
            if new is None:
                table.items.pop(key, None)
            else:
                table.items[key] = new
        returned = {"ALL_OLD": old, "UPDATED_OLD": old, "ALL_NEW": new, "UPDATED_NEW": new}
        attributes = returned.get(request.get("ReturnValues", "NONE"))
        return {"Attributes": dict(attributes)} if attributes else {}
