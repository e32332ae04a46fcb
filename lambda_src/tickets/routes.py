"""The route table: every path the function serves, its methods and the handler that serves it.

One table drives the resolver's registration (app.py), the `Allow` header and the 404 and 405 texts
(here), and the paths of the served API document (tickets_local/openapi.py). A route is added by an
entry here, its handler in app.py and its documentation (tickets_local/openapi_parts.json, the README).

Paths are literal except for `{name}` segments. A segment that starts with `_` is never a key
(keys.KEY_PATTERN), so the `_` prefix is reserved for the service's own routes: an unknown `/_x` is
404, never a key.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .settings import Settings

RESERVED_PREFIX = "_"
_PARAMETER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    path: str  # an OpenAPI path template: literal segments and `{name}` segments
    methods: tuple[str, ...]
    handler: str  # the name of its function in app.py's create_app
    summary: str
    # Its access rules' operation (access.OPERATIONS); None: no rule needed.
    operation: str | None = "issue"

    @property
    def parameters(self) -> tuple[str, ...]:
        """The path parameters, in order; the handler takes them as keyword arguments."""
        return tuple(_PARAMETER.findall(self.path))

    @property
    def rule(self) -> str:
        """The path as Powertools' resolver registers it: `<name>` for a parameter, and the rest escaped,
        since the resolver compiles a rule into a regular expression (`v1.counter` must not match `v1-counter`)."""
        parts = _PARAMETER.split(self.path)  # literal, name, literal, name, ..., literal
        return "".join(f"<{part}>" if index % 2 else re.escape(part) for index, part in enumerate(parts))

    @property
    def allow(self) -> str:
        """The `Allow` header of a 405 on this path."""
        return ", ".join(self.methods)

    def describe(self) -> str:
        return f"{' or '.join(self.methods)} {self.path}"

    def matches(self, path: str) -> bool:
        return _pattern(self.path).fullmatch(path) is not None


ROUTES = (
    Route("/", ("GET", "POST"), "next_default_ticket", "Next ticket(s) of the default key, or of the key named"),
    Route("/{key}", ("GET", "POST"), "next_ticket", "Next ticket(s) of a key"),
    Route("/_blocks/{key}", ("GET", "POST"), "reserve_block", "Reserve a range block of a key's tickets"),
    Route("/_counters/{key}", ("GET",), "counter_state", "A counter's state in this region; issues nothing", "read"),
    Route("/_health", ("GET",), "health", "The function's version, region and slot; issues nothing", None),
    Route(
        "/_series/{key}",
        ("POST",),
        "issue_series_number",
        "The next number of a series, with its journal entry",
        "series",
    ),
    Route(
        "/_series/{key}/void", ("POST",), "void_series_number", "Void a series number (recorded, never undone)", "void"
    ),
    Route("/_series/{key}/journal", ("GET",), "series_journal", "A page of a series' journal, in order", "read"),
)


def compat_route(path: str) -> Route:
    """The compatibility route (config `compat`), at its configured path: one literal segment."""
    return Route(
        f"/{path}",
        ("GET", "POST"),
        "compat_ticket",
        "Next ticket of ?systemKey=, as the bare number (compatibility route)",
    )


def served(settings: Settings) -> tuple[Route, ...]:
    """The routes one deployment serves: the table, and the compatibility route when configured."""
    return ROUTES if settings.compat_path is None else (*ROUTES, compat_route(settings.compat_path))


def route_of(path: str, routes: tuple[Route, ...]) -> Route | None:
    """The route that serves `path` (normalised: no trailing slash); a literal path before a template."""
    matching = [route for route in routes if route.matches(path)]
    return min(matching, key=lambda route: len(route.parameters), default=None)


def not_found_message(path: str, routes: tuple[Route, ...]) -> str:
    """What a 404 on an unknown path says: the route it lacks a key for, or every path there is."""
    for route in routes:
        if route.parameters and route.path.startswith(f"{path}/"):
            return f"{path} needs a key: {route.describe()}"
    listed = [route.path for route in routes]
    return f"no such path; use {', '.join(listed[:-1])} or {listed[-1]}"


@functools.lru_cache(maxsize=32)
def _pattern(template: str) -> re.Pattern[str]:
    parts = _PARAMETER.split(template)
    # A parameter is one segment, and never one that starts with the reserved prefix.
    regex = "".join(
        f"(?!{re.escape(RESERVED_PREFIX)})[^/]+" if index % 2 else re.escape(part) for index, part in enumerate(parts)
    )
    return re.compile(regex)
