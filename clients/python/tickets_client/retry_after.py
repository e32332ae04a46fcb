"""Retry-After as RFC 9110 (section 10.2.3) defines it, read as both clients read it (docs/reference/clients.md)."""

from __future__ import annotations

import datetime
import re
import time

MAX_RETRY_AFTER_SECONDS = 30.0  # a Retry-After beyond this is honoured only this far


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = "(" + "|".join(_MONTHS) + ")"
_TIME = "([0-9]{2}):([0-9]{2}):([0-9]{2})"
# RFC 9110 section 5.6.7: IMF-fixdate, and the two obsolete forms a recipient must also accept.
_IMF_FIXDATE = re.compile(rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{{2}}) {_MONTH} ([0-9]{{4}}) {_TIME} GMT")
_RFC850_DATE = re.compile(
    rf"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), ([0-9]{{2}})-{_MONTH}-([0-9]{{2}}) {_TIME} GMT"
)
_ASCTIME_DATE = re.compile(rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MONTH} ([0-9 ][0-9]) {_TIME} ([0-9]{{4}})")


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header as RFC 9110 (section 10.2.3) defines it: delay-seconds (digits
    only) or an HTTP-date, capped at MAX_RETRY_AFTER_SECONDS; a date in the past is 0. None when absent
    or anything else (`1.5`, `-1`, `0x10`, `nan`, `inf`, a date in another form): the backoff decides."""
    value = (value or "").strip(" \t")
    if re.fullmatch("[0-9]+", value):
        return min(float(value), MAX_RETRY_AFTER_SECONDS)  # float: a 400-digit value is inf, then the cap
    date = _http_date(value, datetime.datetime.now(datetime.UTC) if now is None else _utc(now))
    if date is None:
        return None
    now_seconds = time.time() if now is None else now
    return min(max(date.timestamp() - now_seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def _utc(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)


def _http_date(value: str, now: datetime.datetime) -> datetime.datetime | None:
    if match := _IMF_FIXDATE.fullmatch(value):
        day, month, year, hour, minute, second = match.groups()
    elif match := _RFC850_DATE.fullmatch(value):
        day, month, short_year, hour, minute, second = match.groups()
        # A two-digit year more than 50 years ahead is the most recent past year with those digits.
        full_year = now.year // 100 * 100 + int(short_year)
        if full_year > now.year + 50:
            full_year -= 100
        elif full_year + 100 <= now.year + 50:
            full_year += 100
        year = str(full_year)
    elif match := _ASCTIME_DATE.fullmatch(value):
        month, day, hour, minute, second, year = match.groups()
    else:
        return None
    try:
        return datetime.datetime(
            int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute), int(second), tzinfo=datetime.UTC
        )
    except ValueError:  # 31 Feb, 25:00
        return None
