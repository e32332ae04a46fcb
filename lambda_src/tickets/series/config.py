"""A series' configuration (checked at synthesis by tickets_deploy/series_rules.py, read back by the function), the
series name of an instant, and the `id` format."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from ..config_json import ALWAYS, ConfigJson

MAX_SAFE_INTEGER = 2**53 - 1  # exact in every JSON parser (settings.MAX_SAFE_INTEGER, without the import cycle)
NO_PERIOD_NAME = "all"  # the series name of a series without periods
MAX_OFFSET_MINUTES = 14 * 60  # UTC-14:00 .. UTC+14:00, the widest offsets in use
MAX_SERIES_CHARS = 32  # a period's name (2026, 2026-27) or `all`, with -rSLOT, as a request names it
DEFAULT_PAGE = 100
MAX_PAGE = 500  # entries of one journal page at most; journal.MAX_PAGE_BYTES ends a page of long entries sooner
OFFSET_PATTERN = re.compile(r"([+-])([01][0-9]):([0-5][0-9])")
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
NUMBER_PLACEHOLDER = re.compile(r"n(?::0([1-9][0-9]?))?")


class SeriesConfigError(ValueError): ...  # the message says which field and why


# As ledgers already record them: start and max written always, periodStartMonth and utcOffset with a period.
_WITH_PERIOD = {"always": lambda config: config.period is not None}


@dataclass(frozen=True)
class SeriesConfig(ConfigJson):
    """A parsed series, as cdk.json writes it (max as derived): what the settings carry and the ledger records."""

    start: int = field(default=1, metadata=ALWAYS)
    period: str | None = None  # None: the numbering never restarts; "yearly": at each period's first instant
    period_start_month: int = field(default=1, metadata=_WITH_PERIOD)
    utc_offset_minutes: int = field(
        default=0,
        metadata={
            **_WITH_PERIOD,
            "name": "utcOffset",
            "encode": lambda minutes: format_offset(minutes),
            "decode": lambda raw: parse_offset(raw, "utcOffset"),
        },
    )
    format: str | None = None  # the answer's `id`; None: no id
    format_max_length: int | None = None
    # the highest number; with formatMaxLength, the highest whose id fits
    max: int = field(default=MAX_SAFE_INTEGER, metadata=ALWAYS)

    def series_name(self, instant: datetime.datetime, region_slot: int, region_slots: int) -> str:
        """The series of a number issued at `instant`: the period's name, and the region's slot when several issue."""
        name = NO_PERIOD_NAME if self.period is None else self._period_name(instant)
        return name if region_slots == 1 else f"{name}-r{region_slot}"

    def _period_name(self, instant: datetime.datetime) -> str:
        local = instant.astimezone(datetime.UTC) + datetime.timedelta(minutes=self.utc_offset_minutes)
        year = local.year if local.month >= self.period_start_month else local.year - 1
        return str(year) if self.period_start_month == 1 else f"{year}-{(year + 1) % 100:02d}"

    def render_id(self, key: str, series: str, number: int) -> str | None:
        if self.format is None:
            return None
        return render(self.format, key, series, number)


def render(text: str, key: str, series: str, number: int) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "series":
            return series
        if name == "key":
            return key
        width = NUMBER_PLACEHOLDER.fullmatch(name)
        assert width is not None  # check_format refused any other
        return str(number).zfill(int(width.group(1) or 0))

    return PLACEHOLDER.sub(value, text)


def parse_offset(raw: Any, where: str) -> int:
    match = OFFSET_PATTERN.fullmatch(raw) if isinstance(raw, str) else None
    minutes = (int(match.group(2)) * 60 + int(match.group(3))) * (-1 if match.group(1) == "-" else 1) if match else None
    if minutes is None or abs(minutes) > MAX_OFFSET_MINUTES:
        raise SeriesConfigError(f'{where} must be an offset from -14:00 to +14:00 such as "+05:30", not {raw!r}')
    return minutes


def format_offset(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
