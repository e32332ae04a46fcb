"""The route table, data: it drives the dispatch, `Allow`, the 404 and 405 texts and the API document
(docs/explanation/design.md#routes). Handlers are named, bound by app.py, so the table imports only plain modules."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal

from . import messages
from .settings import Settings

RESERVED_PREFIX = "_"  # the service's own routes; no key starts with it (keys.KEY_PATTERN)
# The access rules' operation (Runtime.authorize, before any replay and any DynamoDB call).
Operation = Literal["issue", "series", "void", "read", "workers", "none"]
_PARAMETER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Query:
    name: str
    type: Any
    required: bool = False


@dataclass(frozen=True)
class Route:
    path: str  # an OpenAPI path template: literal segments and `{name}` segments
    methods: tuple[str, ...]
    handler: str  # `module.function` in this package: (runtime, request, **path parameters) -> Response
    summary: str
    operation: Operation
    query: tuple[Query, ...] = ()
    body: type | None = None  # the JSON body a POST may carry (messages.py)
    answer: Any = None  # its JSON answer (a messages.py type, or a union of them); None: text only
    text: str | None = None  # the schema of its text/plain answer, when it has one
    idempotency_key: Literal["optional", "required"] | None = None
    errors: tuple[str, ...] = ()  # the error responses it may answer beyond every route's (tickets_local/openapi.py)

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(_PARAMETER.findall(self.path))

    def arguments(self, path: str) -> dict[str, str] | None:
        found = _pattern(self.path, True).match(path)
        if found is None or (self.path.startswith("/{") and path[1:].startswith(RESERVED_PREFIX)):
            return None
        return found.groupdict()

    def matches(self, path: str) -> bool:
        return _pattern(self.path).fullmatch(path) is not None


_TICKET_QUERY = (Query("key", messages.Key), Query("systemKey", messages.Key), Query("count", messages.Count))
_ISSUED: dict[str, Any] = {
    "query": _TICKET_QUERY,
    "body": messages.TicketRequest,
    "answer": messages.IssuedAnswer,
    "text": "IssuedText",
    "idempotency_key": "optional",
    "errors": ("UnknownKey", "Conflict", "TooLarge", "IdempotencyKeyReused", "Unavailable"),
}
_BARE = _ISSUED | {"answer": None, "text": "BareText"}
_BLOCK = _ISSUED | {
    "query": (*_TICKET_QUERY[:2], Query("count", messages.BlockCount)),
    "body": messages.BlockRequest,
    "answer": messages.Block,
    "text": "BlockText",
}
_ACQUIRE: dict[str, Any] = {
    "body": messages.WorkerRequest,
    "answer": messages.WorkerLease,
    "idempotency_key": "optional",
    "errors": ("UnknownPool", "InProgress", "TooLarge", "IdempotencyKeyReused", "PoolFull"),
}
_LIST = {"answer": messages.WorkerPool, "errors": ("UnknownPool", "Unavailable")}
_RENEW: dict[str, Any] = {
    "body": messages.LeaseRequest,
    "answer": messages.WorkerLease,
    "errors": ("UnknownPool", "LeaseLost", "TooLarge", "Unavailable"),
}
_RELEASE: dict[str, Any] = {
    "body": messages.LeaseRequest,
    "answer": messages.WorkerRelease,
    "errors": ("UnknownPool", "TooLarge", "Unavailable"),
}

ROUTES = (
    *(
        Route(path, ("GET", "POST"), f"counters.{name}", summary, "issue", **shapes)
        for path, name, summary, shapes in (
            ("/", "next_default_ticket", "Next ticket(s) of the default key, or of the key named", _ISSUED),
            ("/{key}", "next_ticket", "Next ticket(s) of a key", _ISSUED),
            ("/_blocks/{key}", "reserve_block", "Reserve a range block of a key's tickets", _BLOCK),
        )
    ),
    Route(
        "/_counters/{key}",
        ("GET",),
        "counters.counter_state",
        "A counter's state in this region; issues nothing",
        "read",
        answer=messages.CounterState,
        errors=("UnknownCounter", "Unavailable"),
    ),
    Route(
        "/_health",
        ("GET",),
        "health.health",
        "The function's version, region and slot; issues nothing",
        "none",
        answer=messages.Health,
    ),
    Route(
        "/_series/{key}",
        ("POST",),
        "series.routes.issue_series_number",
        "The next number of a series, with its journal entry",
        "series",
        body=messages.SeriesRequest,
        answer=messages.SeriesNumber,
        idempotency_key="required",
        errors=("UnknownSeries", "Conflict", "TooLarge", "IdempotencyKeyReused", "Unavailable"),
    ),
    Route(
        "/_series/{key}/void",
        ("POST",),
        "series.routes.void_series_number",
        "Void a series number (recorded, never undone)",
        "void",
        body=messages.VoidRequest,
        answer=messages.JournalEntry,
        errors=("UnknownSeries", "TooLarge", "Unavailable"),
    ),
    Route(
        "/_series/{key}/journal",
        ("GET",),
        "series.routes.series_journal",
        "A page of a series' journal, in order",
        "read",
        (
            Query("series", messages.SeriesName, required=True),
            Query("after", messages.Number),
            Query("limit", messages.PageSize),
        ),
        answer=messages.JournalPage,
        errors=("UnknownSeries", "Unavailable"),
    ),
    # Worker-id leases (docs/how-to/worker-ids.md): one route a method.
    *(
        Route(f"/_workers/{{pool}}{path}", (method,), f"workers.routes.{name}", summary, "workers", **shapes)
        for path, method, name, summary, shapes in (
            ("", "POST", "acquire_worker", "Lease a free worker id of a pool", _ACQUIRE),
            ("", "GET", "list_workers", "A pool's live leases", _LIST),
            ("/{worker}", "PUT", "renew_worker", "Renew a worker id's lease, held at the body's epoch", _RENEW),
            ("/{worker}", "DELETE", "release_worker", "Release a worker id's lease early", _RELEASE),
        )
    ),
)


def compat_route(path: str) -> Route:
    summary = "Next ticket of ?systemKey=, as the bare number (compatibility route)"
    return Route(f"/{path}", ("GET", "POST"), "counters.compat_ticket", summary, "issue", **_BARE)


def served(settings: Settings) -> tuple[Route, ...]:
    return ROUTES if settings.compat_path is None else (*ROUTES, compat_route(settings.compat_path))


def route_of(path: str, routes: tuple[Route, ...]) -> Route | None:
    """The route that serves `path` (normalised: no trailing slash); a literal path before a template."""
    matching = [route for route in routes if route.matches(path)]
    return min(matching, key=lambda route: len(route.parameters), default=None)


def allowed(route: Route, routes: tuple[Route, ...]) -> str:
    return ", ".join(method for each in routes if each.path == route.path for method in each.methods)


def not_found_message(path: str, routes: tuple[Route, ...]) -> str:
    """What a 404 on an unknown path says: the route it lacks a key for, or every path there is."""
    for route in routes:
        if route.parameters and route.path.startswith(f"{path}/"):
            return f"{path} needs a key: {' or '.join(route.methods)} {route.path}"
    listed = list(dict.fromkeys(route.path for route in routes))
    return f"no such path; use {', '.join(listed[:-1])} or {listed[-1]}"


# A path parameter: RFC 3986's unreserved and sub-delims, `:`, `@`, and what a proxy may decode; not `/"#?\\`.
_SEGMENT = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"


@functools.lru_cache(maxsize=64)
def _pattern(template: str, dispatch: bool = False) -> re.Pattern[str]:
    """To dispatch, _SEGMENT's characters and `$` as the resolver had it; else any segment not reserved."""
    parts = _PARAMETER.split(template)  # literal, name, literal, name, ..., literal
    pattern = "".join(
        (f"(?P<{part}>{_SEGMENT})" if dispatch else f"(?!{re.escape(RESERVED_PREFIX)})[^/]+")
        if index % 2
        else re.escape(part)
        for index, part in enumerate(parts)
    )
    return re.compile(pattern + "$" if dispatch else pattern)
