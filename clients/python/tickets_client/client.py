"""A client for a Tickets Function URL or the local server (docs/reference/clients.md, clients/conformance.json)."""

from __future__ import annotations

import datetime
import http.client
import json
import random
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard
from urllib.parse import quote, urlencode, urlsplit

from .errors import LeaseLost, PoolFull, TicketsError
from .signing import Signer, function_url_region
from .transport import Transport
from .version import __version__

USER_AGENT = f"tickets-client/{__version__}"
BACKOFF_BASE_SECONDS = 0.1
BACKOFF_CAP_SECONDS = 5.0
MAX_SAFE_INTEGER = 2**53 - 1  # the largest ticket both clients hold exactly (a JS number beyond it rounds)
FUNCTION_TIMEOUT_SECONDS = 10  # lambda_src/tickets/timing.py's (tests/functional/test_client.py holds the two equal)
IN_PROGRESS_RETRY_SECONDS = FUNCTION_TIMEOUT_SECONDS + 5  # past the lock's expiry, with a margin
IN_PROGRESS_MAX_ATTEMPTS = 60  # a bound on attempts too, whatever the jitter draws
MAX_BLOCK = 1_000_000  # the most tickets one /_blocks request may ask for (a deployment may allow fewer)
Answer = dict[str, Any]  # a JSON object: an answer, or the fields a request sends
MAX_RETRY_AFTER_SECONDS = 30.0  # a Retry-After beyond this is honoured only this far

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = "(?P<month>" + "|".join(_MONTHS) + ")"
_TIME = "(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
# RFC 9110 section 5.6.7: IMF-fixdate, and the two obsolete forms a recipient must also accept.
_HTTP_DATES = [
    re.compile(form)
    for form in (
        rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?P<day>[0-9]{{2}}) {_MONTH} (?P<year>[0-9]{{4}}) {_TIME} GMT",
        rf"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?P<day>[0-9]{{2}})-{_MONTH}-"
        rf"(?P<year>[0-9]{{2}}) {_TIME} GMT",
        rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MONTH} (?P<day>[0-9 ][0-9]) {_TIME} (?P<year>[0-9]{{4}})",
    )
]


@dataclass(frozen=True)
class Block:
    """`count` tickets of one lane: first, first + step, ..., last."""

    first: int
    last: int
    step: int
    count: int

    @property
    def tickets(self) -> range:
        return range(self.first, self.last + 1, self.step)


@dataclass(frozen=True)
class SeriesNumber:
    """One number of a series (docs/reference/series.md): `id` is the number in the series' format, if it has one."""

    key: str
    series: str
    ticket: int
    id: str | None


@dataclass(frozen=True)
class WorkerGrant:
    """A lease as the service answered it: `expires_at` is milliseconds by ITS wall clock (for display only)."""

    pool: str
    worker: int
    epoch: int
    expires_at: int
    ttl_seconds: int


PLAY_CALLER_HEADER = "X-Tickets-Play-Caller"  # tickets_local/events.py's (a test holds the two equal)
JOURNAL_PAGE = 100  # entries per GET /_series/{key}/journal while iterating (the server allows up to 500)


class TicketsClient:
    def __init__(
        self,
        url: str,
        *,
        sign: bool | None = None,
        region: str | None = None,
        timeout: float = 5,
        max_attempts: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        play_caller: str | None = None,
    ):
        """`play_caller`: the signer a local server started with --play-callers plays (docs/how-to/access-rules.md)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.url = url.rstrip("/")
        self._base_path = parts.path.rstrip("/")
        url_region = function_url_region(parts.hostname)
        region = region or url_region
        sign = url_region is not None if sign is None else sign
        if sign and region is None:
            raise ValueError(f"signing needs a region; pass region= (the URL {url!r} does not name one)")
        self._signer = Signer(region) if sign and region else None
        self._transport = Transport(parts.scheme, parts.hostname, parts.port, timeout)
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._played = {PLAY_CALLER_HEADER: play_caller} if play_caller is not None else {}

    @property
    def signing(self) -> bool:
        return self._signer is not None

    def next(self, key: str | None = None, count: int = 1, *, idempotent: bool = True) -> list[int]:
        """`count` new tickets of `key` (None: the default key), ascending."""
        return _tickets(self._issue(key, count, idempotent), count)

    def next_ids(self, key: str | None = None, count: int = 1, *, idempotent: bool = True) -> list[str]:
        """`count` new ids of the opaque counter `key`, in its tickets' order (`next` refuses them)."""
        return _ids(self._issue(key, count, idempotent), count)

    def issue(self, key: str | None = None, count: int = 1, *, idempotent: bool = True) -> Answer:
        """The server's whole answer, e.g. {"key": "orders", "ticket": 5000}, once its tickets (or ids) check out."""
        answer = self._issue(key, count, idempotent)
        (_ids if "id" in answer else _tickets)(answer, count)  # an opaque counter's ids, or tickets
        return answer

    def _issue(self, key: str | None, count: int, idempotent: bool) -> Answer:
        """The answer unchecked: next(), next_ids() and issue() each check it once, as they read it."""
        return self._request("POST", _key_path(key) + (f"?count={count}" if count != 1 else ""), idempotent=idempotent)

    def block(self, key: str, count: int, *, idempotent: bool = True) -> Block:
        """`count` new tickets of `key` as a range (`POST /_blocks/{key}`): one request for up to MAX_BLOCK."""
        answer = self._request("POST", f"/_blocks{_key_path(key)}?count={count}", idempotent=idempotent)
        fields = [answer.get(name) for name in ("first", "last", "step", "count")]
        numbers = [n for n in fields if _is_ticket(n)]
        if len(numbers) != len(fields):
            raise TicketsError(200, "bad_response", f"the server's answer is not a block: {answer!r:.200}")
        block = Block(*numbers)
        if block.count != count or block.step < 1 or block.last != block.first + block.step * (count - 1):
            raise TicketsError(200, "bad_response", f"asked for a block of {count} tickets, got {answer!r:.200}")
        return block

    def state(self, key: str) -> Answer:
        """The counter's state (`last`, `step`, config, lanes); 404 `not_found` if never used."""
        return self._request("GET", "/_counters" + _key_path(key))

    def series(self, key: str, ref: str | None = None, *, idempotency_key: str | None = None) -> SeriesNumber:
        """The next number of the series `key`, journaled with `ref` (docs/reference/series.md)."""
        body = b"" if ref is None else json_body({"ref": ref})
        answer = self._request("POST", f"/_series{_key_path(key)}", idempotent=idempotency_key or True, body=body)
        number, series, named = answer.get("ticket"), answer.get("series"), answer.get("id")
        if not _is_ticket(number) or not isinstance(series, str) or not isinstance(named, (str, type(None))):
            raise TicketsError(200, "bad_response", f"the server's answer is not a series number: {answer!r:.200}")
        return SeriesNumber(str(answer.get("key", key)), series, number, named)

    def void(self, key: str, series: str, ticket: int, reason: str) -> Answer:
        """Void a number: its journal entry. Safe to retry: voiding again answers the first void."""
        body = json_body({"series": series, "ticket": ticket, "reason": reason})
        return self._request("POST", f"/_series{_key_path(key)}/void", repeatable=True, body=body)

    def journal(self, key: str, series: str, after: int | None = None, limit: int = JOURNAL_PAGE) -> Iterator[Answer]:
        """Every journal entry of the series above `after`, in order, a page of `limit` at a time."""
        while True:
            query = {"series": series, "limit": str(limit), **({} if after is None else {"after": str(after)})}
            page = self._request("GET", f"/_series{_key_path(key)}/journal?{urlencode(query)}", repeatable=True)
            entries = page.get("entries")
            if not isinstance(entries, list):
                raise TicketsError(200, "bad_response", f"the server's answer is not a journal page: {page!r:.200}")
            yield from entries
            if (after := page.get("next")) is None:
                return

    def acquire_worker(self, pool: str, owner: str | None = None, *, idempotency_key: str | None = None) -> WorkerGrant:
        """A free worker id of `pool`; one Idempotency-Key for every attempt gets a retry the same grant."""
        body = b"" if owner is None else json_body({"owner": owner})
        return _grant(self._request("POST", _pool_path(pool), idempotent=idempotency_key or True, body=body))

    def renew_worker(self, pool: str, worker: int, epoch: int) -> WorkerGrant:
        """The lease held at `epoch`, with a new expiry (twice only extends)."""
        return _grant(self._request("PUT", _pool_path(pool, worker), repeatable=True, body=json_body({"epoch": epoch})))

    def release_worker(self, pool: str, worker: int, epoch: int) -> bool:
        """Whether this released the lease (False: stale or released already)."""
        answer = self._request("DELETE", _pool_path(pool, worker), repeatable=True, body=json_body({"epoch": epoch}))
        if not isinstance(answer.get("released"), bool):
            raise TicketsError(200, "bad_response", f"the server's answer is not a release: {answer!r:.200}")
        return bool(answer["released"])

    def list_workers(self, pool: str) -> Answer:
        """The pool: {"pool", "size", "ttlSeconds", "leases"}, its live leases by worker id."""
        answer = self._request("GET", _pool_path(pool), repeatable=True)
        if not _is_ticket(answer.get("size")) or not isinstance(answer.get("leases"), list):
            raise TicketsError(200, "bad_response", f"the server's answer is not a pool: {answer!r:.200}")
        return answer

    def _request(
        self, method: str, path: str, *, idempotent: bool | str = False, body: bytes = b"", repeatable: bool = False
    ) -> Answer:
        """`idempotent`: one Idempotency-Key (a str: that one) for all tries; it or `repeatable` retries 502 and 504."""
        target = self._base_path + path
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **self._played}
        if body:
            headers["Content-Type"] = "application/json"
        if idempotent:
            headers["Idempotency-Key"] = idempotent if isinstance(idempotent, str) else str(uuid.uuid4())
        repeatable = repeatable or bool(idempotent)
        attempts, failed_attempts, waited = 0, 0, 0.0
        while True:
            attempts += 1
            sent = self._signer.headers(method, self.url + path, headers, body) if self._signer else headers
            try:
                status, response_headers, body_read = self._transport.send(method, target, sent, body)
            except (OSError, http.client.HTTPException) as err:
                failure = TicketsError(None, "unreachable", f"no answer from {self.url}: {err or type(err).__name__}")
                delay = _backoff(attempts)
            else:
                if status < 300:
                    return _json_object(status, body_read)
                failure = _server_error(status, body_read, retry_after(response_headers.get("retry-after")))
                if not _retryable(failure, repeatable):
                    raise failure
                delay = max(failure.retry_after or 0.0, _backoff(attempts))
            if _in_progress(failure):
                give_up = waited >= IN_PROGRESS_RETRY_SECONDS or attempts >= IN_PROGRESS_MAX_ATTEMPTS
            else:
                failed_attempts += 1
                give_up = failed_attempts >= self._max_attempts
            if give_up:
                raise failure
            self._sleep(delay)
            waited += delay


def _is_ticket(value: object) -> TypeGuard[int]:
    """A whole number both clients hold exactly (JSON's true is no ticket, though Python's bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_SAFE_INTEGER


def _tickets(answer: Answer, count: int) -> list[int]:
    said = "an opaque counter: take its ids with next_ids()"
    tickets = _issued(answer, count, "ticket", "id", "opaque_counter", said)
    steps = {later - earlier for earlier, later in zip(tickets, tickets[1:])}
    if len(steps) > 1 or min(steps, default=1) < 1:
        raise TicketsError(200, "bad_response", f"the tickets are not ascending by one step: {answer!r:.200}")
    return tickets


def _ids(answer: Answer, count: int) -> list[str]:
    return _issued(answer, count, "id", "ticket", "not_opaque", "not an opaque counter: take its tickets with next()")


def _issued(answer: Answer, count: int, name: str, other: str, code: str, said: str) -> list[Any]:
    """The answer's `name`s (or its one `name`), checked: `count` different ones, the first `name`; `other`s refused."""
    if other in answer and name not in answer:
        raise TicketsError(200, code, f"{said}: {answer!r:.200}")
    valid = _is_ticket if name == "ticket" else lambda each: isinstance(each, str) and each != ""
    issued = answer.get(name + "s", [answer.get(name)])
    if not (
        isinstance(issued, list)
        and len(issued) == count
        and all(valid(each) for each in [answer.get(name), *issued])
        and (name == "ticket" or len(set(issued)) == count)  # tickets: _tickets' one step of 1 or more
        and answer.get(name) == issued[0]
    ):
        raise TicketsError(200, "bad_response", f"asked for {count} {name}s, got {answer!r:.200}")
    return issued


def _key_path(key: str | None) -> str:
    return "/" if key is None else "/" + quote(key, safe="")


def _pool_path(pool: str, worker: int | None = None) -> str:
    return f"/_workers/{quote(pool, safe='')}" + ("" if worker is None else f"/{worker}")


def _grant(answer: Answer) -> WorkerGrant:
    pool, numbers = answer.get("pool"), [answer.get(name) for name in ("worker", "epoch", "expiresAt", "ttlSeconds")]
    counted = [n for n in numbers if _is_ticket(n) and n >= 0]
    if not isinstance(pool, str) or len(counted) != len(numbers) or counted[1] < 1:
        raise TicketsError(200, "bad_response", f"the server's answer is not a worker lease: {answer!r:.200}")
    return WorkerGrant(pool, *counted)


def json_body(fields: Answer) -> bytes:
    """UTF-8 JSON, not ASCII-escaped (or docs/reference/series.md's longest reason is too long); no lone surrogates."""
    try:
        return json.dumps(fields, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"not valid Unicode text (a lone surrogate at {err.start}): {fields!r:.200}") from None


def _retryable(error: TicketsError, idempotent: bool) -> bool:
    # A 502 or 504 may come after the function issued: only an Idempotency-Key makes the retry get that answer.
    busy = error.status in (429, 503) and not isinstance(error, PoolFull)  # a full pool frees an id at an expiry
    return busy or _in_progress(error) or (idempotent and error.status in (502, 504))


def _in_progress(error: TicketsError) -> bool:
    """409 in_progress: the first attempt with this Idempotency-Key is still running; its answer follows."""
    return error.status == 409 and error.code == "in_progress"


def _backoff(attempt: int) -> float:  # capped exponential, full jitter
    return random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)))


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from delay-seconds or an HTTP-date (RFC 9110, 10.2.3), at most MAX_RETRY_AFTER_SECONDS; else None."""
    value = (value or "").strip(" \t")
    if re.fullmatch("[0-9]+", value):
        return min(float(value), MAX_RETRY_AFTER_SECONDS)  # float: a 400-digit value is inf, then the cap
    found = next((match for form in _HTTP_DATES if (match := form.fullmatch(value))), None)
    if found is None:
        return None
    now = time.time() if now is None else now
    year = int(found["year"])
    if len(found["year"]) == 2:  # RFC 850's: the latest year with those digits at most 50 years ahead
        this_year = datetime.datetime.fromtimestamp(now, datetime.UTC).year
        year = this_year + 50 - (this_year + 50 - year) % 100
    try:
        day, hour, minute, second = (int(found[name]) for name in ("day", "hour", "minute", "second"))
        at = datetime.datetime(year, _MONTHS.index(found["month"]) + 1, day, hour, minute, second, tzinfo=datetime.UTC)
    except ValueError:  # 31 Feb, 25:00
        return None
    return min(max(at.timestamp() - now, 0.0), MAX_RETRY_AFTER_SECONDS)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _json_object(status: int, body: bytes) -> Answer:
    if not isinstance(answer := _json(body), dict):
        raise TicketsError(status, "bad_response", f"expected a JSON object, got {body[:200]!r}")
    return answer


def _server_error(status: int, body: bytes, wait: float | None = None) -> TicketsError:
    """The server's {"error", "message"}; for other bodies (a proxy's page, AWS's 403), `http_<status>` and text."""
    answer = _json(body)
    if isinstance(answer, dict) and isinstance(code := answer.get("error"), str):
        message = str(answer.get("message", ""))
        if code == "pool_full" and wait is not None:
            message += f"; retry after {wait:g} s"
        kind = {"pool_full": PoolFull, "lease_lost": LeaseLost}.get(code, TicketsError)
        return kind(status, code, message, wait)
    text = (answer.get("Message") or answer.get("message")) if isinstance(answer, dict) else None
    text = text or body.decode("utf-8", "replace").strip()[:200] or http.client.responses.get(status, "")
    return TicketsError(status, f"http_{status}", str(text), wait)
