"""A journal entry, the one record of a series number, and the series table's items (docs/explanation/series.md)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..config_json import camel
from ..messages import JournalEntry, SeriesNumber, Void
from ..tables import SERIES_PARTITION_KEY, SERIES_SORT_KEY
from .config import SeriesConfig

Item = dict[str, Any]
MAX_REF_CHARS = 128
MAX_REASON_CHARS = 500
# A page's bytes at most, each entry's JSON escaped twice (the most a Lambda runtime makes of it): within 6 MB.
MAX_PAGE_BYTES = 5 * 1024 * 1024


def head_key(key: str, series: str) -> Item:
    return {SERIES_PARTITION_KEY: {"S": f"head#{key}#{series}"}, SERIES_SORT_KEY: {"N": "0"}}


def entries_partition(key: str, series: str) -> str:
    return f"entry#{key}#{series}"


def entry_key(key: str, series: str, number: int) -> Item:
    return {SERIES_PARTITION_KEY: {"S": entries_partition(key, series)}, SERIES_SORT_KEY: {"N": str(number)}}


def request_key(key: str, caller: str, idempotency_key: str) -> Item:
    # A caller and an Idempotency-Key may hold `#`: the caller's length keeps every pair's item its own.
    named = f"request#{key}#{len(caller)}:{caller}#{idempotency_key}"
    return {SERIES_PARTITION_KEY: {"S": named}, SERIES_SORT_KEY: {"N": "0"}}


def iso_time(epoch_millis: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch_millis / 1000, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Entry:
    key: str
    series: str
    ticket: int
    time: str
    caller: str
    idempotency_key: str
    ref: str | None = None
    id: str | None = None
    void: Void | None = None

    def answer(self) -> SeriesNumber:
        answer: SeriesNumber = {"key": self.key, "series": self.series, "ticket": self.ticket}
        if self.id is not None:
            answer["id"] = self.id
        return answer

    def to_json(self) -> JournalEntry:
        return {
            **self.answer(),
            "time": self.time,
            "caller": self.caller,
            "idempotencyKey": self.idempotency_key,
            "ref": self.ref,
            "voided": self.void,
        }

    def to_item(self) -> Item:
        texts = {name: getattr(self, attribute) for attribute, name in _TEXTS}
        return entry_key(self.key, self.series, self.ticket) | {
            name: {"S": value} for name, value in texts.items() if value is not None
        }

    @classmethod
    def from_item(cls, item: Item) -> Entry:
        void: Void | None = None
        if "voidedBy" in item:
            void = {"by": item["voidedBy"]["S"], "at": item["voidedAt"]["S"], "reason": item["voidReason"]["S"]}
        texts = {attribute: item[name]["S"] for attribute, name in _TEXTS if name in item}
        return cls(ticket=int(item[SERIES_SORT_KEY]["N"]), void=void, **texts)


_TEXTS = tuple((each, camel(each)) for each in ("key", "series", "time", "caller", "idempotency_key", "ref", "id"))


def journal_page(entries: Iterable[Entry], limit: int) -> tuple[list[Entry], int | None]:
    """A page's entries (up to `limit`, within MAX_PAGE_BYTES, at least one) and its `next` (None: the end)."""
    page: list[Entry] = []
    size = 0
    for entry in entries:
        size += len(json.dumps(json.dumps(entry.to_json()))) + 1  # and its comma
        if page and size > MAX_PAGE_BYTES:
            return page, page[-1].ticket
        page.append(entry)
        if len(page) == limit:
            return page, entry.ticket
    return page, None


@dataclass(frozen=True)
class IssueRequest:
    key: str
    config: SeriesConfig
    series: str  # the series a new number goes to (a retry keeps its first attempt's)
    caller: str
    idempotency_key: str
    ref: str | None
    lock_seconds: float  # the request's remaining time; the lock lasts this plus the store's LOCK_MARGIN_SECONDS


@dataclass(frozen=True)
class RequestItem:
    series: str
    ref: str | None
    owner: str
    locked_until: int
    claim: int | None

    @classmethod
    def from_item(cls, item: Item) -> RequestItem:
        return cls(
            series=item["series"]["S"],
            ref=item["ref"]["S"] if "ref" in item else None,
            owner=item["owner"]["S"],
            locked_until=int(item["lockedUntil"]["N"]),
            claim=int(item["claim"]["N"]) if "claim" in item else None,
        )
