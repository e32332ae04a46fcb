"""The counter routes: tickets, range blocks, the compatibility route, a counter's state."""

from __future__ import annotations

import functools
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from . import protocol
from .errors import BadRequest, Exhausted
from .runtime import Runtime
from .wire import Request, Response, json_response, text_response

# The audit record: EMF metadata on the one metrics line, printed even on a failure (docs/how-to/restore.md reads it).
AUDIT_FIELDS = ("key", "count", "first_ticket", "last_ticket", "correlation_id", "tickets_left")


def next_ticket(
    runtime: Runtime, request: Request, key: str | None = None, route: str = protocol.TICKETS_ROUTE
) -> Response:
    issued = _issued_for(runtime, request, route, key)
    if not protocol.prefers_text(request.headers.get("accept")):
        return json_response(200, issued)
    if route == protocol.BLOCKS_ROUTE:
        return text_response(f"{issued['first']} {issued['last']} {issued['step']}\n")
    return text_response(protocol.render_text(protocol.issued_values(issued)))


next_default_ticket = next_ticket
reserve_block = functools.partial(next_ticket, route=protocol.BLOCKS_ROUTE)


def compat_ticket(runtime: Runtime, request: Request) -> Response:
    issued = _issued_for(runtime, request, protocol.TICKETS_ROUTE, path_key=None, compat=True)
    # As the API Gateway counter pattern answers: no newline (a caller may parse the body as one integer).
    return text_response("\n".join(map(str, protocol.issued_values(issued))))


def counter_state(runtime: Runtime, request: Request, key: str) -> Response:
    asked = protocol.state_request(key, request.raw_query_string, request.body)  # the key decoded, as the rules name it
    runtime.authorize(request, asked)
    state = runtime.issuer.state(asked)
    counter = runtime.issuer.counter(asked)
    if counter.opaque is not None:
        state["opaque"] = runtime.opaque_state(counter)
    return json_response(200, state)


def _issued_for(
    runtime: Runtime, request: Request, route: str, path_key: str | None, *, compat: bool = False
) -> dict[str, Any]:
    body = protocol.request_body(request.body, request.is_base64_encoded)  # no isBase64Encoded: plain text
    asked = protocol.ticket_request(
        path_key,
        request.raw_query_string,
        body,
        # Without a key, the compat route's URL names the key its path did before compat: a retry replays, and a
        # new request is refused below.
        request.path.lstrip("/") if compat else runtime.settings.default_key,
        route,
    )
    runtime.logger.append_keys(key=asked.key, count=asked.count)
    runtime.authorize(request, asked.key)

    def checked_issue() -> dict[str, Any]:
        if compat and not asked.named:
            raise BadRequest("this route needs the counter's key: ?systemKey=KEY")
        if asked.route == protocol.BLOCKS_ROUTE:
            runtime.issuer.check_block(asked.key, asked.count)  # before any write to the counter table
        counter = runtime.issuer.counter(asked.key)
        # An opaque counter's key unreadable: 503 before any write.
        ids = runtime.opaque_ids(asked.key, counter) if counter.opaque is not None else None
        try:
            issued = runtime.issuer.issue(asked)
        except Exhausted:  # an opaque counter's says nothing of its max and step
            if ids is None:
                raise
            raise Exhausted(f"{asked.key} cannot issue that many more: ask for fewer. Nothing was issued.") from None
        metrics = runtime.metrics
        metrics.add_metric(name="TicketsIssued", unit=MetricUnit.Count, value=asked.count)
        if issued.near_max:
            metrics.add_metric(name="CounterNearMax", unit=MetricUnit.Count, value=1)
            runtime.logger.warning("counter passed 90% of its max", extra={"max": issued.counter.max})
        if (days_left := issued.days_left) is not None:
            # One metric for every key (its Minimum: the soonest any lane runs out): a dimension per key is billed.
            metrics.add_metric(name="CounterDaysLeft", unit=MetricUnit.NoUnit, value=days_left)
        audit = (
            asked.key,
            asked.count,
            issued.first,
            issued.last,
            runtime.logger.get_correlation_id(),
            issued.tickets_left,
        )
        for name, value in zip(AUDIT_FIELDS, audit, strict=True):
            if value is not None:
                metrics.add_metadata(name, value)
        return issued.answer(asked.route, ids)

    return runtime.once(request, asked, checked_issue)
