"""From a Function URL event to its answer, by the route table (routes.py): which handler, or which
404, 405 or 400; and every exception as the API's JSON error.

The order is the one Powertools' resolver kept, so every answer is as it was: literal paths first,
then the table's parameterised paths in order, each with its methods; a path none takes is answered
by `unrouted`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import protocol
from .errors import BadRequest, MethodNotAllowed, NotFound, TicketsError
from .keys import KEY_RULE
from .observability import count_error, logger
from .routes import Route, not_found_message, route_of
from .services import Services
from .web import Request, Response, json_response

# The check a route runs before its handler: (services, request, route, path parameters); raises a
# TicketsError to refuse. None today; access rules (who may do what to which key) go here.
RouteCheck = Callable[[Services, Request, Route, dict[str, str]], None]


class Dispatcher:
    """One deployment's routes (routes.served) and the services their handlers are given. `check`:
    what runs before every handler, given the route (its `operation`) and its path parameters."""

    def __init__(self, routes: tuple[Route, ...], services: Services, check: RouteCheck | None = None):
        self.routes = routes
        self.services = services
        self.check = check
        # The resolver's order: literal paths before parameterised ones, each in the table's order.
        self._ordered = tuple(sorted(routes, key=lambda route: bool(route.parameters)))

    def answer(self, event: dict[str, Any]) -> Response:
        try:
            normalised = _normalised(event)
            request = Request(normalised, _method(normalised), normalised.get("rawPath") or "/")
            return self._routed(request)
        except Exception as err:  # every failure is an answer in the API's format
            return refused(err)

    def _routed(self, request: Request) -> Response:
        method = request.method.upper()
        for route in self._ordered:
            if method not in route.methods:
                continue
            arguments = route.arguments(request.path)
            if arguments is None:
                continue
            if self.check is not None:
                self.check(self.services, request, route, arguments)
            return route.handler(self.services, request, **arguments)
        return self.unrouted(request)

    def unrouted(self, request: Request) -> Response:
        """A path no route serves (404, naming the paths), or a route's path with another method (405)."""
        route = route_of(request.path, self.routes)
        if route is None:
            return error_response(NotFound(not_found_message(request.path, self.routes)))
        if request.method in route.methods:  # as sent: a lower-case `get` was 405 here, and stays so
            # A path segment with a character no URL carries (`"`, a backslash, ...): no key has them.
            return error_response(BadRequest(f"invalid key in the path: a key is {KEY_RULE}"))
        return error_response(MethodNotAllowed(f"this path accepts {route.allow}", headers={"Allow": route.allow}))


def _normalised(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its paths normalised (protocol.normalise_path): routes never see a trailing slash."""
    http = event.get("requestContext", {}).get("http", {})
    raw_path, path = event.get("rawPath") or "/", http.get("path") or "/"
    if protocol.normalise_path(raw_path) == raw_path and protocol.normalise_path(path) == path:
        return event
    return {
        **event,
        "rawPath": protocol.normalise_path(raw_path),
        "requestContext": {**event.get("requestContext", {}), "http": {**http, "path": protocol.normalise_path(path)}},
    }


def _method(event: dict[str, Any]) -> str:
    method: str = event.get("requestContext", {}).get("http", {}).get("method", "")
    return method


def refused(err: Exception) -> Response:
    if not isinstance(err, TicketsError):
        logger.exception("unhandled error")
        err = TicketsError("an unexpected error; nothing was handed out. It has been logged")
    return error_response(err)


def error_response(err: TicketsError) -> Response:
    count_error(err)
    return json_response(err.status, {"error": err.code, "message": err.message}, err.headers)
