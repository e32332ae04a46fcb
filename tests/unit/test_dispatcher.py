"""The dispatch by the route table (lambda_src/tickets/dispatch.py), with stand-in handlers bound to the real
table: which handler a request reaches with which path parameters, 404, 405 with `Allow`, 400 for a key no URL
carries, errors as JSON and what the app's report is told. The real handlers behind it: tests/functional."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tickets.dispatch import UNEXPECTED, Dispatcher
from tickets.errors import Exhausted, TicketsError
from tickets.routes import served
from tickets.settings import Settings
from tickets.wire import Request, Response, json_response

SERVICES = object()  # what every handler is given first: the dispatch passes it on untouched


def event(path: str, method: str = "GET") -> dict[str, Any]:
    """A Function URL event as the dispatch reads it (the full shape: tests/fixtures/function_url_event.json)."""
    return {"rawPath": path, "requestContext": {"http": {"method": method, "path": path}}}


def recording(name: str, calls: list[tuple[str, str, dict[str, str]]]):
    def handler(services: object, request: Request, **path: str) -> Response:
        assert services is SERVICES
        calls.append((name, request.operation, path))
        return json_response(200, {"handler": name})

    return handler


def dispatcher(settings: Settings | None = None, **replaced: Any):
    calls: list[tuple[str, str, dict[str, str]]] = []
    reports: list[tuple[TicketsError, Exception]] = []
    routes = served(settings or Settings())
    handlers = {route.handler: replaced.get(route.handler, recording(route.handler, calls)) for route in routes}
    return Dispatcher(routes, handlers, SERVICES, lambda *reported: reports.append(reported)), calls, reports


def answer(dispatch: Dispatcher, path: str, method: str = "GET") -> tuple[int, dict[str, Any], dict[str, str]]:
    result = dispatch.answer(event(path, method)).to_result()
    return result["statusCode"], json.loads(result["body"]), result["headers"]


@pytest.mark.parametrize(
    "path, method, handler, operation, arguments",
    [
        ("/", "GET", "counters.next_default_ticket", "issue", {}),
        ("/orders", "POST", "counters.next_ticket", "issue", {"key": "orders"}),
        ("/orders/", "GET", "counters.next_ticket", "issue", {"key": "orders"}),
        ("/_blocks/orders", "GET", "counters.reserve_block", "issue", {"key": "orders"}),
        ("/_counters/a%2Fb", "GET", "counters.counter_state", "read", {"key": "a%2Fb"}),
        ("/_health", "GET", "health.health", "none", {}),
        ("/_series/inv", "POST", "series.routes.issue_series_number", "series", {"key": "inv"}),
        ("/_series/inv/void", "POST", "series.routes.void_series_number", "void", {"key": "inv"}),
        ("/_series/inv/journal", "GET", "series.routes.series_journal", "read", {"key": "inv"}),
    ],
)
def test_each_path_reaches_its_handler_with_its_operation_and_parameters(path, method, handler, operation, arguments):
    dispatch, calls, reports = dispatcher()
    assert answer(dispatch, path, method)[:2] == (200, {"handler": handler})
    assert calls == [(handler, operation, arguments)] and reports == []


def test_the_compat_route_is_dispatched_only_when_configured():
    plain, calls, _ = dispatcher()
    answer(plain, "/v1.counter")
    compat, compat_calls, _ = dispatcher(Settings(compat_path="v1.counter"))
    answer(compat, "/v1.counter")
    assert calls[0][0] == "counters.next_ticket" and compat_calls[0][0] == "counters.compat_ticket"


@pytest.mark.parametrize(
    "path, method, status, allow",
    [
        ("/orders", "DELETE", 405, "GET, POST"),
        ("/_counters/orders", "POST", 405, "GET"),
        ("/_series/inv", "GET", 405, "POST"),
        ("/_health", "PATCH", 405, "GET"),
        ("/a/b", "GET", 404, None),
        ("/_x", "GET", 404, None),  # the `_` prefix is the service's: never a key
        ('/a"b', "GET", 400, None),  # a character no URL carries: no key has it
    ],
)
def test_refusals_are_json_errors_the_report_sees(path, method, status, allow):
    dispatch, calls, reports = dispatcher()
    got, body, headers = answer(dispatch, path, method)
    assert (got, headers.get("Allow")) == (status, allow) and calls == []
    assert set(body) == {"error", "message"} and headers["Cache-Control"] == "no-store"
    assert [(answered.status, answered is raised) for answered, raised in reports] == [(status, True)]


def test_a_404_lists_the_paths_and_one_missing_its_key_names_its_route():
    dispatch, _, _ = dispatcher()
    assert answer(dispatch, "/_counters")[1]["message"] == "/_counters needs a key: GET /_counters/{key}"
    assert answer(dispatch, "/a/b")[1]["message"].startswith("no such path; use /, /{key}, /_blocks/{key}")


def test_a_handlers_error_is_its_answer_and_a_crash_a_500_that_says_nothing_of_it():
    def refuse(services: object, request: Request, **path: str) -> Response:
        raise Exhausted("counter 'orders' has no ticket left")

    def crash(services: object, request: Request, **path: str) -> Response:
        raise KeyError("a bug")

    dispatch, _, reports = dispatcher(**{"counters.next_ticket": refuse, "health.health": crash})
    assert answer(dispatch, "/orders")[:2] == (409, {"error": "exhausted", "message": reports[0][0].message})
    status, body, _ = answer(dispatch, "/_health")
    assert (status, body) == (500, {"error": "internal_error", "message": UNEXPECTED})
    (_, _), (answered, raised) = reports
    assert isinstance(raised, KeyError) and answered is not raised  # the app logs the traceback of `raised`


def test_a_route_without_its_handler_fails_when_the_app_is_built():
    routes = served(Settings())
    with pytest.raises(KeyError, match="health.health"):
        handlers = {route.handler: recording(route.handler, []) for route in routes if route.handler != "health.health"}
        Dispatcher(routes, handlers, SERVICES)
