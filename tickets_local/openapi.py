"""The API's OpenAPI document for one deployment's settings, derived from the code (routes, messages, bounds, errors);
openapi_parts.json holds only prose. `make generated` writes the default config's, the repository's openapi.json."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from importlib import resources
from typing import Any

import tickets
from tickets import errors, keys, messages
from tickets.config_json import json_name
from tickets.opaque import ALPHABETS, OpaqueConfig
from tickets.routes import Query, Route, allowed, served
from tickets.series import journal
from tickets.series.config import DEFAULT_PAGE, MAX_PAGE, MAX_SERIES_CHARS
from tickets.settings import MAX_SAFE_INTEGER, CounterConfig, Settings
from tickets.workers.config import MAX_EPOCH, MAX_POOL_SIZE, OWNER_PATTERN
from tickets_deploy.rules import MAX_TICKET, MAX_WIDTH, MIN_WIDTH
from tickets_deploy.schema import COUNTER_FIELDS

PARTS = "openapi_parts.json"
IDEMPOTENCY_HEADER = "Idempotency-Key"
_EXAMPLE_KEY = "3f2b8c2e-8f7a-4f0e-9a53-0d2f4d1c9b7e"  # a UUID, as the document advises
_REF = "#/components/schemas/"
# The error responses every operation may answer; a route (tickets.routes) lists only its own
COMMON_ERRORS = ("BadRequest", "FunctionUrlForbidden", "FunctionUrlThrottled", "InternalError", "FunctionUrlBadGateway")


def _scalars() -> dict[str, dict[str, Any]]:
    """The schemas of the scalars messages.py names (Annotated[..., "Name"]), from the bounds the code checks."""
    value = f"[{''.join(sorted(set(''.join(ALPHABETS.values()))))}]+"
    return {
        "Key": _text(keys.MAX_KEY_CHARS, keys.KEY_PATTERN.pattern, description=keys.KEY_RULE),
        "Count": {"type": "integer", "minimum": 1, "maximum": keys.MAX_COUNT},
        "BlockCount": {"type": "integer", "minimum": 1, "maximum": keys.MAX_BLOCK},
        "Ticket": {"type": "integer", "format": "int64", "minimum": 0, "maximum": MAX_TICKET},
        "OpaqueId": _text(max(MAX_WIDTH.values()), value, minLength=MIN_WIDTH),
        "Step": {"type": "integer", "minimum": 1},
        "Number": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
        "SeriesName": _text(MAX_SERIES_CHARS, "[^#]+"),
        "Time": {"type": "string", "format": "date-time"},
        "Reason": _text(journal.MAX_REASON_CHARS),
        "Ref": _text(journal.MAX_REF_CHARS),
        "PageSize": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": DEFAULT_PAGE},
        "IssuedText": {"type": "string", "pattern": f"^({value}\\n){{1,{keys.MAX_COUNT}}}$"},
        "BareText": {"type": "string", "pattern": f"^{value}(\\n{value}){{0,{keys.MAX_COUNT - 1}}}$"},
        "BlockText": {"type": "string", "pattern": "^[0-9]+ [0-9]+ [0-9]+\\n$"},
        "Worker": {"type": "integer", "minimum": 0, "maximum": MAX_POOL_SIZE - 1},
        "Epoch": {"type": "integer", "minimum": 1, "maximum": MAX_EPOCH},
        "Millis": {"type": "integer", "minimum": 0, "description": "ms since the Unix epoch, by the service's clock"},
        "Owner": {"type": "string", "pattern": f"^{OWNER_PATTERN.pattern}$"},
        "IdempotencyKey": _text(keys.MAX_IDEMPOTENCY_KEY_CHARS, keys.IDEMPOTENCY_KEY_PATTERN.pattern),
    }


def _text(max_length: int, pattern: str | None = None, **described: Any) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": max_length,
        **({"pattern": f"^{pattern}$"} if pattern else {}),
        **described,
    }


class _Schemas:
    """components.schemas, filled as the operations name them."""

    def __init__(self, prose: dict[str, Any]):
        self.prose = prose
        self.defined: dict[str, Any] = {}
        self.scalars = _scalars()

    def ref(self, name: str, build: typing.Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if name not in self.defined:
            self.defined[name] = {}  # a placeholder first: a message may name itself through another
            schema = build()
            prose = self.prose.get(name, {})
            self.defined[name] = {**schema, **{k: v for k, v in prose.items() if k != "properties"}}
        return {"$ref": f"{_REF}{name}"}

    def of(self, annotation: Any) -> dict[str, Any]:
        origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
        if origin in (typing.NotRequired, typing.Required):  # read by _message
            return self.of(arguments[0])
        if origin is typing.Annotated:
            marker = annotation.__metadata__[0]  # a scalar's name, or a class
            return self.ref(marker, lambda: self.scalars[marker]) if isinstance(marker, str) else self.of(marker)
        if origin in (types.UnionType, typing.Union):  # `X | None`, or one of several messages (IssuedAnswer)
            present = [argument for argument in arguments if argument is not type(None)]
            if len(present) == 1:
                return {"anyOf": [self.of(present[0]), {"type": "null"}]}
            return {"oneOf": [self.of(argument) for argument in arguments]}
        if origin is list:
            return {"type": "array", "items": self.of(arguments[0])}
        if origin is typing.Literal:
            return {"const": arguments[0]} if len(arguments) == 1 else {"enum": list(arguments)}
        if typing.is_typeddict(annotation):
            return self.ref(annotation.__name__, lambda: self._message(annotation))
        if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
            return self.ref(annotation.__name__, lambda: self._dataclass(annotation))
        return {"type": {int: "integer", str: "string", bool: "boolean"}[annotation]}

    def _message(self, message: Any) -> dict[str, Any]:
        hints = typing.get_type_hints(message, include_extras=True)
        described = self.prose.get(message.__name__, {}).get("properties", {})
        properties = {name: self._described(self.of(hint), described.get(name)) for name, hint in hints.items()}
        required = [name for name in hints if name in message.__required_keys__]
        return {
            "type": "object",
            "additionalProperties": False,
            **({"required": required} if required else {}),
            "properties": properties,
        }

    def _dataclass(self, config: Any) -> dict[str, Any]:
        """A counter's config as the function answers it (CounterConfig.to_json), and the settings nested in it:
        required where every version writes them (tickets.config_json)."""
        described = {each.attribute: each.doc for each in COUNTER_FIELDS} if config is CounterConfig else {}
        prose = self.prose.get(config.__name__, {}).get("properties", {})
        hints = typing.get_type_hints(config, localns={"OpaqueConfig": OpaqueConfig})
        properties, required = {}, []
        for field in dataclasses.fields(config):
            name = json_name(field)
            hint = hints[field.name]
            ticket = config is CounterConfig and hint is int
            schema = {"type": "integer", "minimum": 0, "maximum": MAX_TICKET} if ticket else self.of(hint)
            properties[name] = self._described(schema, prose.get(name, described.get(field.name)))
            if "always" in field.metadata or field.default is dataclasses.MISSING:
                required.append(name)
        return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}

    @staticmethod
    def _described(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
        return {**schema, "description": description} if description else schema


def document(settings: Settings) -> dict[str, Any]:
    """The OpenAPI document of a deployment with these settings (only the compatibility path matters)."""
    parts = json.loads(resources.files(__package__ or "tickets_local").joinpath(PARTS).read_text())  # ours to change
    doc: dict[str, Any] = parts["document"]
    schemas = _Schemas(parts["schemas"])
    routes = served(settings)
    paths: dict[str, Any] = {}
    for route in routes:  # a path's routes, one a method, make one path item
        paths.setdefault(route.path, {}).update(_path_item(route, parts, schemas))
    components = doc.pop("components")
    components["headers"]["Allow"]["schema"]["enum"] = list(dict.fromkeys(allowed(route, routes) for route in routes))
    used = {"MethodNotAllowed", *COMMON_ERRORS, *(name for route in routes for name in route.errors)}
    components["responses"] = {
        name: _error_response(entry, schemas) for name, entry in parts["responses"].items() if name in used
    }
    components["schemas"] = dict(sorted(schemas.defined.items()))
    doc["info"] = {"title": doc["info"]["title"], "version": tickets.__version__, **doc["info"]}
    return {**doc, "paths": paths, "components": components}


def render(settings: Settings) -> bytes:
    return (json.dumps(document(settings), indent=2, ensure_ascii=False) + "\n").encode()


def _path_item(route: Route, parts: dict[str, Any], schemas: _Schemas) -> dict[str, Any]:
    """The route's operations, one per method: alike but for their ids and the request body (not GET's)."""
    function = route.handler.rsplit(".", 1)[1]
    prose = parts["operations"].get(function, {})
    first, *rest = function.split("_")
    operation_id = first + "".join(map(str.capitalize, rest))  # a second method's adds its name
    described_as = {**parts["parameters"], **prose.get("parameters", {})}  # an operation's own words first
    parameters = [
        _parameter(Query(name, _PATH_TYPES.get(name, messages.Key), True), "path", described_as, schemas)
        for name in route.parameters
    ]
    parameters += [_parameter(query, "query", described_as, schemas) for query in route.query]
    if route.idempotency_key is not None:
        header = Query(IDEMPOTENCY_HEADER, messages.IdempotencyKey, required=route.idempotency_key == "required")
        parameters.append({**_parameter(header, "header", described_as, schemas), "example": _EXAMPLE_KEY})
    content = {}
    if route.answer is not None:
        content["application/json"] = {"schema": schemas.of(route.answer)}
    if (text := route.text) is not None:
        content["text/plain"] = {"schema": schemas.ref(text, lambda: schemas.scalars[text])}
    cached = {"Cache-Control": {"$ref": "#/components/headers/CacheControl"}}
    responses = {"200": {"description": prose.get("answer", route.summary), "headers": cached, "content": content}}
    repeated = set(COMMON_ERRORS) & set(route.errors)
    if repeated:
        raise ValueError(f"{route.handler}'s route lists {sorted(repeated)}, which every operation has")
    for name in (*COMMON_ERRORS, *route.errors):
        responses[_status(parts["responses"][name])] = {"$ref": f"#/components/responses/{name}"}
    item = {}
    for method in route.methods:
        described = {
            "operationId": operation_id + (method.capitalize() if method != route.methods[0] else ""),
            "summary": route.summary,
            "description": prose.get("description", route.summary),
            "tags": prose.get("tags", [route.handler.split(".")[0]]),
            "parameters": parameters,
        }
        body: Any = route.body  # a TypedDict
        if method != "GET" and body is not None:
            described["requestBody"] = {
                "required": bool(body.__required_keys__),
                **parts["requestBodies"].get(body.__name__, {}),
                "content": {"application/json": {"schema": schemas.of(body)}},
            }
        item[method.lower()] = {**described, "responses": dict(sorted(responses.items()))}
    return item


_PATH_TYPES = {"worker": messages.Worker}  # a path parameter's type, when it is not a key


def _parameter(query: Query, where: str, described_as: dict[str, str], schemas: _Schemas) -> dict[str, Any]:
    return {
        "name": query.name,
        "in": where,
        "required": query.required,
        "description": described_as[f"{where}:{query.name}"],
        "schema": schemas.of(query.type),
    }


def _status(entry: dict[str, Any]) -> str:
    """An error response's status: its codes' (one), or the one openapi_parts.json gives (the Function URL's own)."""
    if "status" in entry:
        return str(entry["status"])
    statuses = {error.status for error in vars(errors).values() if getattr(error, "code", None) in entry["errors"]}
    if len(statuses) != 1:
        raise ValueError(f"{entry['errors']}: one response, but the codes answer statuses {sorted(statuses)}")
    return str(statuses.pop())


def _error_response(entry: dict[str, Any], schemas: _Schemas) -> dict[str, Any]:
    """The Error message with its codes; from the Function URL, AWS's own body too, or alone (no codes)."""
    headers = {name: {"$ref": f"#/components/headers/{name.replace('-', '')}"} for name in entry.get("headers", [])}
    schema: dict[str, Any] = {"type": "object"}  # the Function URL's own answer, in AWS's format
    if "errors" in entry:
        headers = {"Cache-Control": {"$ref": "#/components/headers/CacheControl"}, **headers}
        ours = {"allOf": [schemas.of(messages.Error), {"properties": {"error": {"enum": entry["errors"]}}}]}
        schema = {"anyOf": [ours, schema]} if entry.get("fromFunctionUrl") else ours
    described = {"description": entry["description"], **({"headers": headers} if headers else {})}
    return {**described, "content": {"application/json": {"schema": schema}}}


if __name__ == "__main__":  # the default config's document: the repository's openapi.json
    sys.stdout.buffer.write(render(Settings()))
