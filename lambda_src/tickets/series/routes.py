"""The series routes (docs/reference/series.md): each request's body or query checked before anything is read or
written; the journal's code is imported inside them (most functions serve no series)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from .. import protocol
from ..access.rules import caller
from ..errors import BadRequest, NotFound, echo
from ..keys import require_idempotency_key
from ..messages import JournalPage
from ..runtime import Runtime
from ..wire import Request, Response, json_response
from .config import DEFAULT_PAGE, MAX_PAGE, MAX_SERIES_CHARS, SeriesConfig

if TYPE_CHECKING:
    from .store import SeriesStore

MAX_BODY_BYTES = 4096  # a 500-character reason in any script, with room for the JSON around it


def issue_series_number(runtime: Runtime, request: Request, key: str) -> Response:
    config, journal = _series_of(runtime, request, key)
    from .journal import MAX_REF_CHARS, IssueRequest

    ref = _body(request, ("ref",), '{"ref": "order 1043"}').get("ref")
    if ref is not None and (not isinstance(ref, str) or not 1 <= len(ref) <= MAX_REF_CHARS):
        raise BadRequest(f"the body's ref must be a string of 1-{MAX_REF_CHARS} characters, got {echo(ref)}")
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
    entry, replayed = journal.issue(issue)
    if not replayed:
        _count(runtime, "SeriesIssued", entry.key, entry.series)
        runtime.metrics.add_metadata("ticket", entry.ticket)  # the audit fields
        runtime.metrics.add_metadata("correlation_id", runtime.logger.get_correlation_id())
    return json_response(200, entry.answer())


def void_series_number(runtime: Runtime, request: Request, key: str) -> Response:
    _, journal = _series_of(runtime, request, key)
    from .journal import MAX_REASON_CHARS

    example = '{"series": "2026", "ticket": 1043, "reason": "issued twice by mistake"}'
    fields = _body(request, ("series", "ticket", "reason"), example)
    missing = [name for name in ("series", "ticket", "reason") if name not in fields]
    if missing:
        raise BadRequest(f"the body lacks {', '.join(missing)}: send {example}")
    reason = fields["reason"]
    if not isinstance(reason, str) or not 1 <= len(reason) <= MAX_REASON_CHARS:
        raise BadRequest(f"reason must be a string of 1-{MAX_REASON_CHARS} characters, got {echo(reason)}")
    series, number = _series(fields["series"]), _number(fields["ticket"], "ticket")
    entry, voided_now = journal.void(key, series, number, caller(request.event), reason)
    if voided_now:
        _count(runtime, "SeriesVoided", key, series)
    return json_response(200, entry.to_json())


def series_journal(runtime: Runtime, request: Request, key: str) -> Response:
    config, journal = _series_of(runtime, request, key)
    from .journal import journal_page

    query = protocol.query_parameters_of(request.raw_query_string, ("series", "after", "limit"))
    if "series" not in query:
        raise BadRequest("the journal needs ?series=NAME (a series name, as POST /_series/{key} answers it)")
    after = _number(query["after"], "after") if "after" in query else config.start - 1
    limit = _number(query["limit"], "limit") if "limit" in query else DEFAULT_PAGE
    if not 1 <= limit <= MAX_PAGE:
        raise BadRequest(f"limit must be from 1 to {MAX_PAGE}")
    series = _series(query["series"])
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


def _body(request: Request, allowed: tuple[str, ...], example: str) -> dict[str, Any]:
    body = protocol.request_body(request.body, request.is_base64_encoded, MAX_BODY_BYTES)
    return protocol.body_fields(body, allowed, example)


def _series(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_SERIES_CHARS or "#" in value:
        raise BadRequest(f"invalid series {echo(value)}: a series name is as POST /_series/{{key}} answers it")
    return value


def _number(value: Any, name: str) -> int:
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 16:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53:
        return value
    raise BadRequest(f"{name} must be a whole number, got {echo(value)}")


def _count(runtime: Runtime, name: str, key: str, series: str) -> None:
    """One series number in the request's metrics line, by key and series (configured: few dimensions)."""
    runtime.metrics.add_dimension(name="key", value=key)
    runtime.metrics.add_dimension(name="series", value=series)
    runtime.metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
