"""A series' cdk.json fields checked at synthesis (tickets.series.config holds what the function reads back):
each refusal names the field and the way out (docs/reference/configuration.md)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from tickets.config_json import json_name
from tickets.series.config import (
    MAX_SAFE_INTEGER,
    NO_PERIOD_NAME,
    NUMBER_PLACEHOLDER,
    PLACEHOLDER,
    SeriesConfig,
    SeriesConfigError,
    parse_offset,
    render,
)

PERIODS = ("yearly",)
MAX_YEAR_DIGITS = 4  # years up to 9999: a yearly series name is YYYY, or YYYY-YY when it starts after January
MAX_FORMAT_LENGTH = 200
MAX_WIDTH = 20  # the widest zero-padding {n:0W} may ask for (a number is at most MAX_SAFE_INTEGER's 16 digits)
PLACEHOLDERS = f"{{series}}, {{key}}, {{n}} and {{n:0W}} (the number, zero-padded to W digits, W from 1 to {MAX_WIDTH})"

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
    for name in PLACEHOLDER.findall(text):
        if name in ("series", "key"):
            used.add(name)
        elif number := NUMBER_PLACEHOLDER.fullmatch(name):
            if (width := int(number.group(1) or 0)) > MAX_WIDTH:
                digits = len(str(MAX_SAFE_INTEGER))
                raise SeriesConfigError(
                    f"{where} pads the number to {width} digits ({{{name}}}), more than the {MAX_WIDTH} allowed (a "
                    f"number has at most {digits}): use a width from 1 to {MAX_WIDTH}, such as {{n:0{digits}}}"
                )
            used.add("n")
        else:
            raise SeriesConfigError(f"{where} has an unknown placeholder {{{name}}}; use {PLACEHOLDERS}")
    if "{" in PLACEHOLDER.sub("", text) or "}" in PLACEHOLDER.sub("", text):
        raise SeriesConfigError(f"{where} has a stray brace; placeholders are {PLACEHOLDERS}")
    if "n" not in used:
        raise SeriesConfigError(f"{where} lacks the number: add {{n}} or {{n:0W}}")
    return used


def longest_id_length(text: str, key: str, series_length: int, number: int) -> int:
    return len(render(text, key, "x" * series_length, number))


def _whole(value: Any, where: str, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SeriesConfigError(f"{where} must be a whole number from {low} to {high}, not {value!r}")
    return value
