"""Retry-After as RFC 9110 (section 10.2.3) defines it, read as both clients read it (docs/reference/clients.md)."""

from __future__ import annotations

import datetime
import re
import time

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


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from delay-seconds or an HTTP-date, at most MAX_RETRY_AFTER_SECONDS; None for anything else."""
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
        date = datetime.datetime(
            year, _MONTHS.index(found["month"]) + 1, day, hour, minute, second, tzinfo=datetime.UTC
        )
    except ValueError:  # 31 Feb, 25:00
        return None
    return min(max(date.timestamp() - now, 0.0), MAX_RETRY_AFTER_SECONDS)
