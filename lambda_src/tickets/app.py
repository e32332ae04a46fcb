"""The service as one deployment runs it: routes, rendering and error mapping around an Issuer.

`create_app` is the one way to build it. The Lambda module (handler.py) calls it once at import,
from the environment the stack sets; the tests, the local server and the bench call it directly,
each with its own settings and DynamoDB client, as many times as they like.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import botocore.session
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config

from . import __version__, protocol, routes, timing
from .access import Identity, Rules
from .caller import caller
from .errors import BadRequest, MethodNotAllowed, NotFound, TicketsError, forbidden
from .issuer import Issuer
from .keys import KEY_RULE, MAX_BLOCK, MAX_COUNT, require_idempotency_key
from .log_format import record_issuance
from .sequence import Lane
from .series.config import SeriesConfig
from .settings import Settings
from .store import CounterStore

if TYPE_CHECKING:
    from .idempotency import IdempotentIssue
    from .series.store import SeriesStore

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]  # (event, context) -> the Function URL's result

DYNAMODB_CONFIG = Config(
    # botocore's `max_attempts` counts retries only; `total_max_attempts` counts all (timing.py: one).
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
# Tracer() imports the X-Ray SDK, which builds two botocore clients at import: hundreds of ms of cold
# start. The stack turns tracing on; where it is off (tests, the local server, the bench), skip it.
TRACING = os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() not in ("1", "true")
tracer = Tracer() if TRACING else None
_compact_json = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps with options builds one per call


def dynamodb_client(**where: Any) -> Any:
    """A DynamoDB client with timing.py's timeouts and attempts. botocore's, without boto3 (~40 ms of
    cold start). `where`: create_client's region_name, endpoint_url or credentials, if not the
    environment's."""
    return botocore.session.get_session().create_client("dynamodb", config=DYNAMODB_CONFIG, **where)


@dataclass(frozen=True)
class App:
    """One deployment's function: Lambda calls `lambda_handler`; tests and the bench reach the rest."""

    dynamodb: Any  # the client as given; every call goes through the request's deadline
    issuer: Issuer
    resolver: LambdaFunctionUrlResolver
    lambda_handler: LambdaHandler


def create_app(
    settings: Settings,
    dynamodb: Any,
    counter_table: str,
    idempotency_table: str,
    *,
    shuffle: Callable[[list[Lane]], None] = random.shuffle,
    region: str | None = None,
    series_table: str | None = None,
    clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    access: Callable[[], Rules] | None = None,
) -> App:
    """Everything one deployment's function serves with. `shuffle` orders the lanes a request tries:
    at random, unless a test pins them. `region`: the one GET /_health names; by default the
    function's, AWS_REGION (which Lambda sets). `series_table`: the journal's table, needed when
    the settings configure series. `clock`: what says which period a new series number falls in.
    `access`: the deployment's access rules (docs/callers.md#access-rules), or an Unavailable error when
    they cannot be read; None: every invoker may do everything."""
    if settings.series and series_table is None:
        raise ValueError("these settings configure series: create_app needs their table (series_table)")
    serving_region = region or os.environ.get("AWS_REGION")
    deadline = timing.Deadline()
    client = timing.DeadlineBoundClient(dynamodb, deadline)
    issuer = Issuer(settings, CounterStore(client, counter_table), shuffle)
    # The journal's code is loaded only where series are configured: most functions serve none, and its
    # modules would only add to their cold start.
    journal = _series_store(client, series_table) if settings.series and series_table else None
    resolver = LambdaFunctionUrlResolver()
    idempotent_issue: IdempotentIssue | None = None

    served_routes = routes.served(settings)
    handlers: dict[str, Callable[..., Response[str]]] = {}

    def handles(route_handler: Callable[..., Response[str]]) -> Callable[..., Response[str]]:
        handlers[route_handler.__name__] = route_handler
        return route_handler

    @handles
    def next_default_ticket() -> Response[str]:
        return issue(protocol.TICKETS_ROUTE, path_key=None)

    @handles
    def next_ticket(key: str) -> Response[str]:
        if key.startswith(routes.RESERVED_PREFIX):  # never a key: a path of ours, with another method, or none
            return unrouted()
        return issue(protocol.TICKETS_ROUTE, path_key=key)

    @handles
    def compat_ticket() -> Response[str]:
        """The compatibility route (config `compat`): the named key's tickets, answered as the bare
        number. It has no default key: the same URL without ?systemKey= issued the key named like
        the path before compat was configured, and must not issue another counter's numbers now (it
        stands for that key only to replay a retry of such a request: issued_for)."""
        bare = protocol.render_bare(issued_for(protocol.TICKETS_ROUTE, path_key=None, compat=True))
        return Response(200, "text/plain; charset=utf-8", bare)

    @handles
    def reserve_block(key: str) -> Response[str]:
        return issue(protocol.BLOCKS_ROUTE, path_key=key)

    @handles
    def counter_state(key: str) -> Response[str]:
        event = resolver.current_event
        authorize(key)
        return _json(200, issuer.state(protocol.state_request(key, event.raw_query_string, event.body)))

    @handles
    def health() -> Response[str]:
        """Issues nothing and calls nothing: what runs here, for probes and for operators."""
        event = resolver.current_event
        protocol.no_query_nor_body("GET /_health", event.raw_query_string, event.body)
        return _json(
            200,
            {
                "status": "ok",
                "version": __version__,
                "region": serving_region,
                "slot": settings.region_slot,
                "slots": settings.region_slots,
            },
        )

    @handles
    def issue_series_number(key: str) -> Response[str]:
        """One number of the series and its journal entry; a retry (same Idempotency-Key) gets the same."""
        event = resolver.current_event
        authorize(key)
        config, journal = series_of(key)
        from .series import requests as series_requests
        from .series.store import IssueRequest

        protocol.no_query_nor_body(f"POST /_series/{key}", event.raw_query_string, None)
        ref = series_requests.issue_request(event.body, bool(event.is_base64_encoded))
        idempotency_key = headers().get("idempotency-key")
        if idempotency_key is None:
            raise BadRequest(
                "a series number needs an Idempotency-Key header (a new one per document, reused on retries): "
                "without one a lost answer would leave a number nobody holds"
            )
        series = config.series_name(clock(), settings.region_slot, settings.region_slots)
        request = IssueRequest(
            key,
            config,
            series,
            caller(event.raw_event),
            require_idempotency_key(idempotency_key),
            ref,
            deadline.remaining_seconds(),
        )
        issued = journal.issue(request)
        if not issued.replayed:
            series_metric("SeriesIssued", issued.entry.key, issued.entry.series)
            metrics.add_metadata("ticket", issued.entry.ticket)  # the audit fields of the metrics line
            metrics.add_metadata("correlation_id", event.request_context.request_id)
        return _json(200, issued.entry.answer())

    @handles
    def void_series_number(key: str) -> Response[str]:
        """Record who voided a number, when and why; a void is never undone (a repeat answers the first)."""
        event = resolver.current_event
        authorize(key)
        _, journal = series_of(key)
        from .series import requests as series_requests

        protocol.no_query_nor_body(f"POST /_series/{key}/void", event.raw_query_string, None)
        void = series_requests.void_request(event.body, bool(event.is_base64_encoded))
        entry, voided_now = journal.void(key, void.series, void.ticket, caller(event.raw_event), void.reason)
        if voided_now:  # a repeated void answers the first and is not counted again
            series_metric("SeriesVoided", key, void.series)
        return _json(200, entry.to_json())

    @handles
    def series_journal(key: str) -> Response[str]:
        """A page of the journal, in number order; `next` is the `after` of the following page."""
        event = resolver.current_event
        authorize(key)
        config, journal = series_of(key)
        from .series import requests as series_requests

        protocol.no_query_nor_body(f"GET /_series/{key}/journal", None, event.body)
        asked = series_requests.journal_request(event.raw_query_string)
        after = config.start - 1 if asked.after is None else asked.after
        entries = journal.page(key, asked.series, after, asked.limit)
        following = entries[-1].ticket if len(entries) == asked.limit else None
        body = {"key": key, "series": asked.series, "entries": [e.to_json() for e in entries], "next": following}
        return _json(200, body)

    def authorize(key: str) -> None:
        """403 unless a rule allows it: before any replay and any DynamoDB call."""
        if access is None:
            return
        event = resolver.current_event
        route = routes.route_of(event.path, served_routes)
        if route is None or route.operation is None:
            raise TicketsError(f"no access operation for {event.path}")  # a handler of ours asked: a bug
        identity = Identity.of(event.raw_event)
        if not access().allows(identity, route.operation, key):
            metrics.add_metric(name="Forbidden", unit=MetricUnit.Count, value=1)
            raise forbidden(identity.describe(), route.operation, key)

    def series_of(key: str) -> tuple[SeriesConfig, SeriesStore]:
        """The configured series `key` and the journal's store; 404 for a key that is not a series."""
        config = settings.series.get(key)
        if config is None or journal is None:
            configured = ", ".join(sorted(settings.series)) or "none"
            raise NotFound(f"{key!r} is not a configured series (configured: {configured}); see docs/series.md")
        return config, journal

    for route in served_routes:
        resolver.route(route.rule, method=list(route.methods))(handlers[route.handler])

    def unrouted() -> Response[str]:
        """A path no route serves (404, naming the paths), or a route's path with another method (405)."""
        event = resolver.current_event
        route = routes.route_of(event.path, served_routes)
        if route is None:
            return _error(NotFound(routes.not_found_message(event.path, served_routes)))
        if event.http_method in route.methods:
            # The router refuses some characters (`"`, a backslash, ...) in a path segment; no key has them.
            return _error(BadRequest(f"invalid key in the path: a key is {KEY_RULE}"))
        return _error(MethodNotAllowed(f"this path accepts {route.allow}", headers={"Allow": route.allow}))

    resolver.not_found(lambda _: unrouted())

    def refused(err: Exception) -> Response[str]:
        if not isinstance(err, TicketsError):
            logger.exception("unhandled error")
            err = TicketsError("an unexpected error; nothing was handed out. It has been logged")
        return _error(err)

    resolver.exception_handler(Exception)(refused)

    def issue(route: str, path_key: str | None) -> Response[str]:
        issued = issued_for(route, path_key)
        if protocol.prefers_text(headers().get("accept")):
            if route == protocol.BLOCKS_ROUTE:
                text = protocol.render_block_text(issued["first"], issued["last"], issued["step"])
            else:
                text = protocol.render_text(protocol.tickets_of(issued))
            return Response(200, "text/plain; charset=utf-8", text)
        return _json(200, issued)

    def issued_for(route: str, path_key: str | None, *, compat: bool = False) -> dict[str, Any]:
        """The request's tickets (idempotently when it carries an Idempotency-Key), as the JSON answer.

        Replays first: before an Idempotency-Key's stored answer is looked up, only what makes the
        request readable is checked (its key, count, query and body). Whatever depends on the config
        (maxBlock, strictKeys, max, compat's need for a key) is checked in `checked_issue`, which a
        replay never reaches, so a retry after a deploy still gets the tickets it was issued."""
        event = resolver.current_event
        body = protocol.request_body(event.body, bool(event.is_base64_encoded))  # no isBase64Encoded: plain text
        request = protocol.ticket_request(
            path_key,
            event.raw_query_string,
            body,
            # Without a key, the compatibility route's URL means what it meant before compat was configured,
            # the key named like its path: a retry from then replays; a new request is refused below.
            event.path.lstrip("/") if compat else settings.default_key,
            max_count=MAX_BLOCK if route == protocol.BLOCKS_ROUTE else MAX_COUNT,
        )
        logger.append_keys(key=request.key, count=request.count)
        authorize(request.key)
        # What an Idempotency-Key's record is checked against. The ticket route's stays {key, count}, as
        # records stored before range blocks existed say it; a block names its route, so one header cannot
        # be answered a list on one route and a range on the other.
        described = {"key": request.key, "count": request.count}
        if route != protocol.TICKETS_ROUTE:
            described["route"] = route

        def checked_issue() -> dict[str, Any]:
            if compat and not request.named:
                raise BadRequest("this route needs the counter's key: ?systemKey=KEY")
            if route == protocol.BLOCKS_ROUTE:
                issuer.check_block(request.key, request.count)  # before any write to the counter table
            return issue_and_record(described)

        idempotency_key = headers().get("idempotency-key")
        if idempotency_key is None:
            return checked_issue()
        once = idempotent_issue or load_idempotency()
        return once(event.raw_event, require_idempotency_key(idempotency_key), described, deadline, checked_issue)

    def headers() -> dict[str, str]:
        # A Function URL lower-cases header names; event.headers would build a case-insensitive copy.
        raw: dict[str, str] = resolver.current_event.raw_event.get("headers") or {}
        return raw

    def issue_and_record(request: dict[str, Any]) -> dict[str, Any]:
        key, count = request["key"], request["count"]
        issued = issuer.issue(key, count)
        metrics.add_metric(name="TicketsIssued", unit=MetricUnit.Count, value=count)
        if issued.near_max:
            metrics.add_metric(name="CounterNearMax", unit=MetricUnit.Count, value=1)
            logger.warning("counter passed 90% of its max", extra={"max": issued.counter.max})
        record_issuance(  # the audit fields, in the request's one metrics line (log_format.py)
            metrics,
            key=key,
            count=count,
            first_ticket=issued.first,
            last_ticket=issued.last,
            correlation_id=logger.get_correlation_id(),
        )
        return issued.range_json() if request.get("route") == protocol.BLOCKS_ROUTE else issued.to_json()

    def load_idempotency() -> IdempotentIssue:
        nonlocal idempotent_issue
        from .idempotency import idempotent  # imported on first use: most requests carry no header

        idempotent_issue = idempotent(
            client=client,
            table_name=idempotency_table,
            expires_after_seconds=settings.idempotency_expiry_seconds,
        )
        return idempotent_issue

    @logger.inject_lambda_context(clear_state=True)
    @_traced
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        deadline.start(context.get_remaining_time_in_millis())
        # The Function URL's request id; set directly, as a JMESPath correlation path costs more per call.
        logger.set_correlation_id(event.get("requestContext", {}).get("requestId"))
        result = resolver.resolve(_normalised(event), context)
        # A cached GET would hand one ticket to two callers.
        result.setdefault("headers", {})["Cache-Control"] = "no-store"
        return result

    return App(dynamodb, issuer, resolver, lambda_handler)


def _series_store(client: Any, table: str) -> SeriesStore:
    from .series.store import SeriesStore

    return SeriesStore(client, table)


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


def series_metric(name: str, key: str, series: str) -> None:
    """A count of one series' numbers, by key and series, in the request's metrics line (an invocation
    serves one request, and Powertools clears the dimensions after each line). Series are configured
    and periods few, so the dimensions stay bounded."""
    metrics.add_dimension(name="key", value=key)
    metrics.add_dimension(name="series", value=series)
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def _json(status: int, body: dict[str, Any], extra_headers: dict[str, str] | None = None) -> Response[str]:
    return Response(status, "application/json", _compact_json(body), headers=extra_headers)


def _error(err: TicketsError) -> Response[str]:
    # `code` is one of a handful of fixed strings, so the dimension stays bounded.
    metrics.add_dimension(name="code", value=err.code)
    metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=1)
    log = logger.warning if err.status >= 500 else logger.info
    log("refused", extra={"status": err.status, "code": err.code, "error": err.message})
    return _json(err.status, {"error": err.code, "message": err.message}, err.headers)


def _traced(handler: LambdaHandler) -> LambdaHandler:
    return tracer.capture_lambda_handler(handler) if tracer is not None else handler
