"""A series' configuration (parsed by tickets_deploy.rules, read back by the function), the series name of an
instant, and the `id` format."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..config_json import ALWAYS, ConfigJson, json_name

MAX_SAFE_INTEGER = 2**53 - 1  # exact in every JSON parser (settings.MAX_SAFE_INTEGER, without the import cycle)
PERIODS = ("yearly",)
NO_PERIOD_NAME = "all"  # the series name of a series without periods
MAX_YEAR_DIGITS = 4  # years up to 9999: a yearly series name is YYYY, or YYYY-YY when it starts after January
MAX_OFFSET_MINUTES = 14 * 60  # UTC-14:00 .. UTC+14:00, the widest offsets in use
MAX_FORMAT_LENGTH = 200
MAX_SERIES_CHARS = 32  # a period's name (2026, 2026-27) or `all`, with -rSLOT, as a request names it
DEFAULT_PAGE = 100
MAX_PAGE = 500  # entries of one journal page at most; journal.MAX_PAGE_BYTES ends a page of long entries sooner
MAX_WIDTH = 20  # the widest zero-padding {n:0W} may ask for (a number is at most MAX_SAFE_INTEGER's 16 digits)
OFFSET_PATTERN = re.compile(r"([+-])([01][0-9]):([0-5][0-9])")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NUMBER_PLACEHOLDER = re.compile(r"n(?::0([1-9][0-9]?))?")
PLACEHOLDERS = f"{{series}}, {{key}}, {{n}} and {{n:0W}} (the number, zero-padded to W digits, W from 1 to {MAX_WIDTH})"


class SeriesConfigError(ValueError):
    """A series config that cannot be served; the message says which field and why."""


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
        return _render(self.format, key, series, number)


FIELDS = tuple(json_name(each) for each in fields(SeriesConfig))


def parse_series(key: str, raw: Any, *, region_slots: int, where: str) -> SeriesConfig:
    if not isinstance(raw, dict):
        raise SeriesConfigError(f"{where} must be an object")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise SeriesConfigError(f"{where} has unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}")
    start = _whole(raw.get("start", 1), f"{where}.start", low=0, high=MAX_SAFE_INTEGER)
    period = raw.get("period")
    if period is not None and period not in PERIODS:
        raise SeriesConfigError(f'{where}.period must be left out (no restart) or "yearly", not {period!r}')
    month = _whole(raw.get("periodStartMonth", 1), f"{where}.periodStartMonth", low=1, high=12)
    offset = parse_offset(raw.get("utcOffset", "+00:00"), f"{where}.utcOffset")
    if period is None and ("periodStartMonth" in raw or "utcOffset" in raw):
        raise SeriesConfigError(f'{where}: periodStartMonth and utcOffset need period "yearly"')
    text = raw.get("format")
    if text is not None and (not isinstance(text, str) or not 1 <= len(text) <= MAX_FORMAT_LENGTH):
        raise SeriesConfigError(f"{where}.format must be a string of 1-{MAX_FORMAT_LENGTH} characters")
    length = raw.get("formatMaxLength")
    if length is not None:
        if text is None:
            raise SeriesConfigError(f"{where}.formatMaxLength needs a format")
        length = _whole(length, f"{where}.formatMaxLength", low=1, high=MAX_FORMAT_LENGTH)
    explicit_max = (
        _whole(raw["max"], f"{where}.max", low=start, high=MAX_SAFE_INTEGER) if "max" in raw else MAX_SAFE_INTEGER
    )
    config = SeriesConfig(start, period, month, offset, text, length, explicit_max)  # in the fields' order
    return config if text is None else _fitted(config, key, region_slots, "max" in raw, where)


def _fitted(config: SeriesConfig, key: str, region_slots: int, explicit_max: bool, where: str) -> SeriesConfig:
    """Its format checked; with formatMaxLength, its max the largest number whose id fits (an explicit max checked)."""
    text, period, start, length = config.format or "", config.period, config.start, config.format_max_length
    placeholders = check_format(text, f"{where}.format")
    if "series" not in placeholders and (period is not None or region_slots > 1):
        reason = "the numbering restarts each period" if period is not None else "each region numbers from start"
        raise SeriesConfigError(
            f"{where}.format {text!r} lacks {{series}}: {reason}, so the plain number repeats and the id "
            "would not identify the invoice. Add {series} to the format"
        )
    if length is None:
        return config
    # The longest series name: `all`, or a year YYYY (YYYY-YY starting after January), and the slot's -rSLOT.
    name = len(NO_PERIOD_NAME) if period is None else MAX_YEAR_DIGITS + (3 if config.period_start_month > 1 else 0)
    longest_series = name if region_slots == 1 else name + len(f"-r{region_slots - 1}")
    if explicit_max:
        longest = longest_id_length(text, key, longest_series, config.max)
        if longest > length:
            raise SeriesConfigError(
                f"{where}: the longest id ({longest} characters, number {config.max} in a series named like "
                f"{'x' * longest_series}) passes formatMaxLength {length}; lower max or shorten the format"
            )
        return config
    nines = (10**digits - 1 for digits in range(1, len(str(MAX_SAFE_INTEGER)) + 1))  # an id grows with the digits
    fitting = max((n for n in nines if longest_id_length(text, key, longest_series, n) <= length), default=-1)
    if fitting < start:
        raise SeriesConfigError(
            f"{where}: no id fits in formatMaxLength {length} (the number {start} already takes "
            f"{longest_id_length(text, key, longest_series, start)} characters); shorten the format or raise it"
        )
    return replace(config, max=min(fitting, MAX_SAFE_INTEGER))


def check_format(text: str, where: str) -> set[str]:
    used: set[str] = set()
    for name in _PLACEHOLDER.findall(text):
        if name in ("series", "key"):
            used.add(name)
        elif number := _NUMBER_PLACEHOLDER.fullmatch(name):
            if (width := int(number.group(1) or 0)) > MAX_WIDTH:
                digits = len(str(MAX_SAFE_INTEGER))
                raise SeriesConfigError(
                    f"{where} pads the number to {width} digits ({{{name}}}), more than the {MAX_WIDTH} allowed (a "
                    f"number has at most {digits}): use a width from 1 to {MAX_WIDTH}, such as {{n:0{digits}}}"
                )
            used.add("n")
        else:
            raise SeriesConfigError(f"{where} has an unknown placeholder {{{name}}}; use {PLACEHOLDERS}")
    if "{" in _PLACEHOLDER.sub("", text) or "}" in _PLACEHOLDER.sub("", text):
        raise SeriesConfigError(f"{where} has a stray brace; placeholders are {PLACEHOLDERS}")
    if "n" not in used:
        raise SeriesConfigError(f"{where} lacks the number: add {{n}} or {{n:0W}}")
    return used


def longest_id_length(text: str, key: str, series_length: int, number: int) -> int:
    return len(_render(text, key, "x" * series_length, number))


def _render(text: str, key: str, series: str, number: int) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "series":
            return series
        if name == "key":
            return key
        width = _NUMBER_PLACEHOLDER.fullmatch(name)
        assert width is not None  # check_format refused any other
        return str(number).zfill(int(width.group(1) or 0))

    return _PLACEHOLDER.sub(value, text)


def parse_offset(raw: Any, where: str) -> int:
    match = OFFSET_PATTERN.fullmatch(raw) if isinstance(raw, str) else None
    minutes = (int(match.group(2)) * 60 + int(match.group(3))) * (-1 if match.group(1) == "-" else 1) if match else None
    if minutes is None or abs(minutes) > MAX_OFFSET_MINUTES:
        raise SeriesConfigError(f'{where} must be an offset from -14:00 to +14:00 such as "+05:30", not {raw!r}')
    return minutes


def format_offset(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _whole(value: Any, where: str, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SeriesConfigError(f"{where} must be a whole number from {low} to {high}, not {value!r}")
    return value
