"""An event's answer by the route table (docs/explanation/design.md#routes): its handler, or 404, 405 or 400; every
exception as the API's JSON error. Plain: app.py binds the handlers and gives the `report` of a refusal."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import protocol
from .access.rules import iam_fields
from .errors import BadRequest, MethodNotAllowed, NotFound, TicketsError
from .keys import KEY_RULE
from .routes import Route, allowed, not_found_message, route_of
from .wire import Request, Response, json_response

Handler = Callable[..., Response]  # (runtime, request, **path parameters) -> Response
# (the error answered, what was raised: not it for a crash), run while the exception is being handled.
Report = Callable[[TicketsError, Exception], None]


@dataclass
class Dispatcher:
    routes: tuple[Route, ...]
    handlers: Mapping[str, Handler]
    runtime: Any
    report: Report = lambda answered, raised: None

    def __post_init__(self) -> None:  # Powertools' order: literal paths first, then the table's
        ordered = sorted(self.routes, key=lambda route: bool(route.parameters))
        self._ordered = tuple((route, self.handlers[route.handler]) for route in ordered)

    def answer(self, event: dict[str, Any]) -> Response:
        try:
            normalised = _normalised(event)
            iam_fields(normalised)  # 403 for an authorizer no Function URL sends, whatever the route and rules
            method = normalised.get("requestContext", {}).get("http", {}).get("method", "")
            path = normalised.get("rawPath") or "/"
            for route, handler in self._ordered:
                if method.upper() in route.methods and (arguments := route.arguments(path)) is not None:
                    return handler(self.runtime, Request(normalised, method, path, route.operation), **arguments)
            unrouted = route_of(path, self.routes)
            if unrouted is None:
                raise NotFound(not_found_message(path, self.routes))
            allow = allowed(unrouted, self.routes)
            if method in allow.split(", "):  # as sent: a lower-case `get` was 405 here, and stays so
                # A path segment with a character no URL carries (`"`, a backslash, ...): no key has them.
                raise BadRequest(f"invalid key in the path: a key is {KEY_RULE}")
            raise MethodNotAllowed(f"this path accepts {allow}", headers={"Allow": allow})
        except Exception as err:
            return self.refused(err)

    def refused(self, raised: Exception) -> Response:
        """The JSON error of what was raised; anything but a TicketsError is a bug, a 500."""
        answered = raised if isinstance(raised, TicketsError) else TicketsError(UNEXPECTED)
        self.report(answered, raised)
        return error_response(answered)


def _normalised(event: dict[str, Any]) -> dict[str, Any]:
    http = event.get("requestContext", {}).get("http", {})
    raw_path, path = event.get("rawPath") or "/", http.get("path") or "/"
    if protocol.normalise_path(raw_path) == raw_path and protocol.normalise_path(path) == path:
        return event
    return {
        **event,
        "rawPath": protocol.normalise_path(raw_path),
        "requestContext": {**event.get("requestContext", {}), "http": {**http, "path": protocol.normalise_path(path)}},
    }


UNEXPECTED = "an unexpected error, logged: no ticket was handed out, but one may have been spent (a gap)"


def error_response(err: TicketsError) -> Response:
    return json_response(err.status, {"error": err.code, "message": err.message}, err.headers)
