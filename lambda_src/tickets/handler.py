"""The Lambda behind the Function URL: routes, rendering and error mapping only."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import botocore.session
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config

from . import protocol, timing
from .errors import BadRequest, MethodNotAllowed, NotFound, TicketsError
from .issuer import Issuer
from .keys import KEY_RULE, MAX_BLOCK, MAX_COUNT, require_idempotency_key
from .log_format import AuditLine
from .settings import COUNTER_TABLE_ENV, IDEMPOTENCY_TABLE_ENV, SETTINGS_ENV, Settings
from .store import CounterStore

if TYPE_CHECKING:
    from .idempotency import IdempotentIssue

_LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]  # (event, context) -> the Function URL's result
_Error = TypeVar("_Error", bound=Exception)
_ErrorResponder = Callable[[_Error], Response[str]]

DYNAMODB_CONFIG = Config(
    # botocore's `max_attempts` counts retries only (3 would make 4 calls); `total_max_attempts` counts all.
    retries={"mode": "standard", "total_max_attempts": timing.DYNAMODB_MAX_ATTEMPTS},
    connect_timeout=timing.DYNAMODB_CONNECT_TIMEOUT_SECONDS,
    read_timeout=timing.DYNAMODB_READ_TIMEOUT_SECONDS,
    # store.py builds every request from validated input, and DynamoDB validates again; botocore's
    # own check of each request against the model cost ~100 us a call (bench/README.md).
    parameter_validation=False,
)

# Lambda's own Invocations metric counts requests; a refusal or a state read adds no metric of ours.
warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
logger = Logger()
metrics = Metrics()
# The audit trail: one line per issuance, Powertools' JSON line printed without the logging machinery.
issued_line = AuditLine(logger, "issued")
app = LambdaFunctionUrlResolver()
# Tracer() imports the X-Ray SDK, which builds two botocore clients at import: hundreds of ms of cold
# start. The stack turns tracing on; where it is off (tests, the local server, the bench), skip it.
TRACING = os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() not in ("1", "true")
tracer = Tracer() if TRACING else None

settings = Settings.from_json(os.environ[SETTINGS_ENV])
# A botocore client is all boto3 would build, without importing boto3 (~40 ms of cold start).
dynamodb = botocore.session.get_session().create_client("dynamodb", config=DYNAMODB_CONFIG)
issuer = Issuer(settings, CounterStore(dynamodb, os.environ[COUNTER_TABLE_ENV]))
_idempotent_issue: IdempotentIssue | None = None
_compact_json = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps with options builds one per call
_NEEDS_A_KEY = {"_counters": "GET /_counters/{key}", "_blocks": "GET or POST /_blocks/{key}?count=N"}


@app.route("/", method=["GET", "POST"])
def next_default_ticket() -> Response[str]:
    return _issue(protocol.TICKETS_ROUTE, path_key=None)


@app.route("/<key>", method=["GET", "POST"])
def next_ticket(key: str) -> Response[str]:
    if key in _NEEDS_A_KEY:
        raise NotFound(f"/{key} needs a key: {_NEEDS_A_KEY[key]}")
    return _issue(protocol.TICKETS_ROUTE, path_key=key)


if settings.compat_path is not None:

    @app.route(f"/{settings.compat_path}", method=["GET", "POST"])
    def compat_ticket() -> Response[str]:
        """The compatibility route (config `compat`): what / issues, answered as the bare number."""
        return Response(200, "text/plain; charset=utf-8", protocol.render_bare(_issued(protocol.TICKETS_ROUTE, None)))


@app.route("/_blocks/<key>", method=["GET", "POST"])
def next_block(key: str) -> Response[str]:
    return _issue(protocol.BLOCKS_ROUTE, path_key=key)


@app.get("/_counters/<key>")
def counter_state(key: str) -> Response[str]:
    event = app.current_event
    return _json(200, issuer.state(protocol.state_request(key, event.raw_query_string, event.body)))


@app.not_found
def unknown_route(_: Exception) -> Response[str]:
    allowed = protocol.allowed_methods(app.current_event.path)
    if allowed is None:
        return _error(NotFound("no such path; use /, /{key}, /_blocks/{key} or /_counters/{key}"))
    if app.current_event.http_method in allowed.split(", "):
        # The router refuses some characters (`"`, a backslash, ...) in a path segment; no key has them.
        return _error(BadRequest(f"invalid key in the path: a key is {KEY_RULE}"))
    return _error(MethodNotAllowed(f"this path accepts {allowed}"), extra_headers={"Allow": allowed})


def _exception_handler(exc_class: type[_Error]) -> Callable[[_ErrorResponder[_Error]], _ErrorResponder[_Error]]:
    """`app.exception_handler`, typed: Powertools leaves its return type unannotated (it registers the
    function and returns it unchanged)."""
    register: Callable[[_ErrorResponder[_Error]], _ErrorResponder[_Error]] = app.exception_handler(exc_class)
    return register


@_exception_handler(TicketsError)
def refused(err: TicketsError) -> Response[str]:
    return _error(err)


@_exception_handler(Exception)
def bug(err: Exception) -> Response[str]:
    logger.exception("unhandled error")
    return _error(TicketsError("an unexpected error; nothing was handed out. It has been logged"))


def _issue(route: str, path_key: str | None) -> Response[str]:
    issued = _issued(route, path_key)
    if protocol.prefers_text(_headers().get("accept")):
        if route == protocol.BLOCKS_ROUTE:
            text = protocol.render_block_text(issued["first"], issued["last"], issued["step"])
        else:
            text = protocol.render_text(protocol.tickets_of(issued))
        return Response(200, "text/plain; charset=utf-8", text)
    return _json(200, issued)


def _issued(route: str, path_key: str | None) -> dict[str, Any]:
    """The request's tickets (idempotently when it carries an Idempotency-Key), as the JSON answer."""
    event = app.current_event
    body = protocol.request_body(event.body, bool(event.is_base64_encoded))  # no isBase64Encoded: plain text
    request = protocol.ticket_request(
        path_key,
        event.raw_query_string,
        body,
        settings.default_key,
        max_count=MAX_BLOCK if route == protocol.BLOCKS_ROUTE else MAX_COUNT,
    )
    logger.append_keys(key=request.key, count=request.count)
    if route == protocol.BLOCKS_ROUTE:
        issuer.check_block(request.key, request.count)  # before any write, the idempotency record's too
    # What an Idempotency-Key's record is checked against. The ticket route's stays {key, count}, as
    # records stored before range blocks existed say it; a block names its route, so one header cannot
    # be answered a list on one route and a range on the other.
    described = {"key": request.key, "count": request.count}
    if route != protocol.TICKETS_ROUTE:
        described["route"] = route
    idempotency_key = _headers().get("idempotency-key")
    if idempotency_key is None:
        return _issue_and_record(described)
    issue = _idempotent_issue or _load_idempotency()
    return issue(_caller(event.raw_event), require_idempotency_key(idempotency_key), described, app.lambda_context)


def _headers() -> dict[str, str]:
    # A Function URL lower-cases header names; event.headers would build a case-insensitive copy.
    headers: dict[str, str] = app.current_event.raw_event.get("headers") or {}
    return headers


def _caller(event: dict[str, Any]) -> str:
    """Who signed the request (AWS_IAM auth); with auth NONE everyone is the same anonymous caller."""
    iam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("iam") or {}
    caller: str = iam.get("userArn") or iam.get("callerId") or "anonymous"
    return caller


def _issue_and_record(request: dict[str, Any]) -> dict[str, Any]:
    key, count = request["key"], request["count"]
    issued = issuer.issue(key, count)
    metrics.add_metric(name="TicketsIssued", unit=MetricUnit.Count, value=count)
    if issued.near_max:
        metrics.add_metric(name="CounterNearMax", unit=MetricUnit.Count, value=1)
        logger.warning("counter passed 90% of its max", extra={"max": issued.counter.max})
    issued_line.emit(first_ticket=issued.first, last_ticket=issued.last)
    return issued.range_json() if request.get("route") == protocol.BLOCKS_ROUTE else issued.to_json()


def _load_idempotency() -> IdempotentIssue:
    global _idempotent_issue
    from .idempotency import idempotent  # imported on first use: most requests carry no header

    _idempotent_issue = idempotent(
        _issue_and_record,
        client=dynamodb,
        table_name=os.environ[IDEMPOTENCY_TABLE_ENV],
        expires_after_seconds=settings.idempotency_expiry_seconds,
    )
    return _idempotent_issue


def _json(status: int, body: dict[str, Any], extra_headers: dict[str, str] | None = None) -> Response[str]:
    return Response(status, "application/json", _compact_json(body), headers=extra_headers)


def _error(err: TicketsError, extra_headers: dict[str, str] | None = None) -> Response[str]:
    # `code` is one of a handful of fixed strings, so the dimension stays bounded.
    metrics.add_dimension(name="code", value=err.code)
    metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=1)
    log = logger.warning if err.status >= 500 else logger.info
    log("refused", extra={"status": err.status, "code": err.code, "error": err.message})
    return _json(err.status, {"error": err.code, "message": err.message}, {**err.headers, **(extra_headers or {})})


def _traced(handler: _LambdaHandler) -> _LambdaHandler:
    return tracer.capture_lambda_handler(handler) if tracer is not None else handler


@logger.inject_lambda_context(clear_state=True)
@_traced
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # The Function URL's request id; set directly, as a JMESPath correlation path costs more per call.
    logger.set_correlation_id(event.get("requestContext", {}).get("requestId"))
    http = event.get("requestContext", {}).get("http", {})
    raw_path, path = event.get("rawPath") or "/", http.get("path") or "/"
    if protocol.normalise_path(raw_path) != raw_path or protocol.normalise_path(path) != path:
        event = {
            **event,
            "rawPath": protocol.normalise_path(raw_path),
            "requestContext": {
                **event.get("requestContext", {}),
                "http": {**http, "path": protocol.normalise_path(path)},
            },
        }
    result = app.resolve(event, context)
    # A cached GET would hand one ticket to two callers.
    result.setdefault("headers", {})["Cache-Control"] = "no-store"
    return result
