"""An event's answer by the route table (docs/explanation/design.md#routes): its handler, or 404, 405 or 400;
every exception as the API's JSON error."""

from __future__ import annotations

from typing import Any

from . import protocol
from .caller import iam_fields
from .errors import BadRequest, MethodNotAllowed, NotFound, TicketsError
from .keys import KEY_RULE
from .routes import Route, not_found_message, route_of
from .services import Request, Response, Services, count_error, json_response, logger


class Dispatcher:
    def __init__(self, routes: tuple[Route, ...], services: Services):
        self.routes = routes
        self.services = services
        # Powertools' order, so answers are as they were: literal paths first, then the table's order.
        self._ordered = tuple(sorted(routes, key=lambda route: bool(route.parameters)))

    def answer(self, event: dict[str, Any]) -> Response:
        try:
            normalised = _normalised(event)
            iam_fields(normalised)  # 403 for an authorizer no Function URL sends, whatever the route and rules
            method, path = _method(normalised), normalised.get("rawPath") or "/"
            routed = self._routed(method.upper(), path)
            if routed is None:
                return self.unrouted(Request(normalised, method, path))
            route, arguments = routed
            # The handler reads its operation from the request (Services.authorize): the table declares it.
            return route.handler(self.services, Request(normalised, method, path, route.operation), **arguments)
        except Exception as err:
            return refused(err)

    def _routed(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route whose handler answers `method` on `path`, and its path parameters."""
        for route in self._ordered:
            if method in route.methods and (arguments := route.arguments(path)) is not None:
                return route, arguments
        return None

    def unrouted(self, request: Request) -> Response:
        route = route_of(request.path, self.routes)
        if route is None:
            return error_response(NotFound(not_found_message(request.path, self.routes)))
        if request.method in route.methods:  # as sent: a lower-case `get` was 405 here, and stays so
            # A path segment with a character no URL carries (`"`, a backslash, ...): no key has them.
            return error_response(BadRequest(f"invalid key in the path: a key is {KEY_RULE}"))
        return error_response(MethodNotAllowed(f"this path accepts {route.allow}", headers={"Allow": route.allow}))


def _normalised(event: dict[str, Any]) -> dict[str, Any]:
    """No trailing slash in its paths (protocol.normalise_path)."""
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
        err = TicketsError("an unexpected error, logged: no ticket was handed out, but one may have been spent (a gap)")
    return error_response(err)


def error_response(err: TicketsError) -> Response:
    count_error(err)
    return json_response(err.status, {"error": err.code, "message": err.message}, err.headers)
