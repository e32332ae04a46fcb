"""The series routes (docs/reference/series.md); the journal's code is imported inside them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit

from .. import protocol
from ..caller import caller
from ..errors import BadRequest, NotFound
from ..keys import require_idempotency_key
from ..messages import JournalPage
from ..runtime import Runtime
from ..wire import Request, Response, json_response
from .config import SeriesConfig

if TYPE_CHECKING:
    from .store import SeriesStore


def issue_series_number(runtime: Runtime, request: Request, key: str) -> Response:
    config, journal = _series_of(runtime, request, key)
    from . import requests as series_requests
    from .journal import IssueRequest

    ref = series_requests.issue_request(request.body, request.is_base64_encoded)
    idempotency_key = request.headers.get("idempotency-key")
    if idempotency_key is None:
        raise BadRequest(
            "a series number needs an Idempotency-Key header (a new one per document, reused on retries): "
            "without one a lost answer would leave a number nobody holds"
        )
    settings = runtime.settings
    series = config.series_name(runtime.clock(), settings.region_slot, settings.region_slots)
    issue = IssueRequest(
        key,
        config,
        series,
        caller(request.event),
        require_idempotency_key(idempotency_key),
        ref,
        runtime.deadline.remaining_seconds(),
    )
    issued = journal.issue(issue)
    if not issued.replayed:
        _count(runtime, "SeriesIssued", issued.entry.key, issued.entry.series)
        runtime.metrics.add_metadata("ticket", issued.entry.ticket)  # the audit fields
        runtime.metrics.add_metadata("correlation_id", request.request_id)
    return json_response(200, issued.entry.answer())


def void_series_number(runtime: Runtime, request: Request, key: str) -> Response:
    _, journal = _series_of(runtime, request, key)
    from . import requests as series_requests

    void = series_requests.void_request(request.body, request.is_base64_encoded)
    entry, voided_now = journal.void(key, void["series"], void["ticket"], caller(request.event), void["reason"])
    if voided_now:
        _count(runtime, "SeriesVoided", key, void["series"])
    return json_response(200, entry.to_json())


def series_journal(runtime: Runtime, request: Request, key: str) -> Response:
    config, journal = _series_of(runtime, request, key)
    from . import requests as series_requests
    from .journal import journal_page

    series, after, limit = series_requests.journal_request(request.raw_query_string)
    after = config.start - 1 if after is None else after
    entries, following = journal_page(journal.entries_after(key, series, after, limit), limit)
    body: JournalPage = {
        "key": key,
        "series": series,
        "entries": [entry.to_json() for entry in entries],
        "next": following,
    }
    return json_response(200, body)


def _series_of(runtime: Runtime, request: Request, key: str) -> tuple[SeriesConfig, SeriesStore]:
    """The series `key` and its journal, for an authorized caller; a POST takes no query, a GET no body."""
    runtime.authorize(request, key)
    config = runtime.settings.series.get(key)
    if config is None or runtime.journal is None:
        configured = ", ".join(sorted(runtime.settings.series)) or "none"
        raise NotFound(f"{key!r} is not a configured series (configured: {configured}); see docs/reference/series.md")
    query, body = (None, request.body) if request.method == "GET" else (request.raw_query_string, None)
    protocol.no_query_nor_body(f"{request.method} {request.path}", query, body)
    return config, runtime.journal


def _count(runtime: Runtime, name: str, key: str, series: str) -> None:
    """One series number in the request's metrics line, by key and series (configured: few dimensions)."""
    runtime.metrics.add_dimension(name="key", value=key)
    runtime.metrics.add_dimension(name="series", value=series)
    runtime.metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
