"""What a series route's request may say: its body or query, checked before anything is read or written."""

from __future__ import annotations

from typing import Any

from ..errors import BadRequest, echo
from ..messages import VoidRequest
from ..protocol import body_fields, query_parameters_of, request_body
from .journal import MAX_REASON_CHARS, MAX_REF_CHARS

MAX_BODY_BYTES = 4096  # a 500-character reason in any script, with room for the JSON around it
DEFAULT_PAGE = 100
MAX_SERIES_CHARS = 32  # a period's name (2026, 2026-27) or `all`, with -rSLOT
MAX_PAGE = 500  # entries of one journal page at most; journal.MAX_PAGE_BYTES ends a page of long entries sooner


def issue_request(body: str | None, is_base64: bool) -> str | None:
    fields = body_fields(request_body(body, is_base64, MAX_BODY_BYTES), ("ref",), '{"ref": "order 1043"}')
    ref = fields.get("ref")
    if ref is not None and (not isinstance(ref, str) or not 1 <= len(ref) <= MAX_REF_CHARS):
        raise BadRequest(f"the body's ref must be a string of 1-{MAX_REF_CHARS} characters, got {echo(ref)}")
    return ref


def void_request(body: str | None, is_base64: bool) -> VoidRequest:
    example = '{"series": "2026", "ticket": 1043, "reason": "issued twice by mistake"}'
    fields = body_fields(request_body(body, is_base64, MAX_BODY_BYTES), ("series", "ticket", "reason"), example)
    missing = [name for name in ("series", "ticket", "reason") if name not in fields]
    if missing:
        raise BadRequest(f"the body lacks {', '.join(missing)}: send {example}")
    reason = fields["reason"]
    if not isinstance(reason, str) or not 1 <= len(reason) <= MAX_REASON_CHARS:
        raise BadRequest(f"reason must be a string of 1-{MAX_REASON_CHARS} characters, got {echo(reason)}")
    return {"series": _series(fields["series"]), "ticket": _number(fields["ticket"], "ticket"), "reason": reason}


def journal_request(raw_query: str | None) -> tuple[str, int | None, int]:
    """The series, `after` (None: from its first number) and limit of a journal page."""
    query = query_parameters_of(raw_query, ("series", "after", "limit"))
    if "series" not in query:
        raise BadRequest("the journal needs ?series=NAME (a series name, as POST /_series/{key} answers it)")
    after = _number(query["after"], "after") if "after" in query else None
    limit = _number(query["limit"], "limit") if "limit" in query else DEFAULT_PAGE
    if not 1 <= limit <= MAX_PAGE:
        raise BadRequest(f"limit must be from 1 to {MAX_PAGE}")
    return _series(query["series"]), after, limit


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
