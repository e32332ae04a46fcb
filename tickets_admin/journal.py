"""A series' journal read with the function's own store (tickets.series.store), for `tickets_admin journal` and
`audit` (the check tests/models/test_series_model.py runs after every step)."""

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from tickets.messages import JournalEntry
from tickets.series.journal import Entry
from tickets.series.store import SeriesStore
from tickets.tables import SERIES_PARTITION_KEY, SERIES_SORT_KEY

from .listing import scan

EVERY_ENTRY = 2**31 - 1  # a Query's largest Limit: its own pages (1 MB each) are followed to the end
VOID_COLUMNS = {"by": "voidedBy", "at": "voidedAt", "reason": "voidReason"}  # a journal entry's `voided`, in CSV
CSV_COLUMNS = (*(name for name in JournalEntry.__annotations__ if name != "voided"), *VOID_COLUMNS.values())


@dataclass(frozen=True)
class Head:
    key: str
    series: str
    start: int
    last: int  # the high-water mark: every number from start to last has an entry


@dataclass(frozen=True)
class SeriesAudit:
    head: Head
    last: int | None  # the highest number with an entry (the mark, or mark + 1 while one is being issued)
    issued: int
    voided: int
    unaccounted: list[int]  # numbers without an entry
    twice: list[int]  # numbers recorded by more than one entry
    reused: dict[tuple[str, str], list[int]]  # (caller, Idempotency-Key) -> its numbers, where more than one

    @property
    def clean(self) -> bool:
        return not self.unaccounted and not self.twice and not self.reused

    def lines(self) -> list[str]:
        span = "no numbers" if self.last is None else f"numbers {self.head.start}..{self.last}"
        lines = [f"{self.head.key} {self.head.series}: {span}: {self.issued} issued, {self.voided} voided"]
        problems = {"UNACCOUNTED (no journal entry)": self.unaccounted, "RECORDED TWICE": self.twice}
        lines += [f"  {problem}: {_numbers(numbers)}" for problem, numbers in problems.items() if numbers]
        for (caller, idempotency_key), numbers in sorted(self.reused.items()):
            lines.append(
                f"  ONE IDEMPOTENCY-KEY, {len(numbers)} NUMBERS: {idempotency_key!r} of {caller}: {_numbers(numbers)}"
            )
        return lines


def audit(head: Head, entries: Iterable[Entry]) -> SeriesAudit:
    """Each number from start to the highest of mark and entries has one entry; each request at most one number."""
    counts: Counter[int] = Counter()
    requests: dict[tuple[str, str], list[int]] = {}
    voided = 0
    for entry in entries:
        counts[entry.ticket] += 1
        voided += entry.void is not None
        requests.setdefault((entry.caller, entry.idempotency_key), []).append(entry.ticket)
    top = max([head.last, *counts])
    return SeriesAudit(
        head,
        top if top >= head.start else None,
        len(counts),
        voided,
        [n for n in range(head.start, top + 1) if n not in counts],
        sorted(n for n, count in counts.items() if count > 1),
        {request: sorted(numbers) for request, numbers in requests.items() if len(numbers) > 1},
    )


@dataclass(frozen=True)
class SeriesTable:
    client: Any
    table: str

    def heads(self, key: str, series: str | None = None) -> list[Head]:
        """The key's series (or the one named), by name, from a consistent Scan. A series whose first request stopped
        before its head was written has one entry and no head: its head is made up, its mark below its start."""
        heads: dict[str, Head] = {}
        first_entries: dict[str, int] = {}
        for item in scan(
            self.client,
            self.table,
            FilterExpression="begins_with(#pk, :heads) OR begins_with(#pk, :entries)",
            ExpressionAttributeNames={"#pk": SERIES_PARTITION_KEY},
            ExpressionAttributeValues={":heads": {"S": f"head#{key}#"}, ":entries": {"S": f"entry#{key}#"}},
        ):
            kind, _, named = item[SERIES_PARTITION_KEY]["S"].partition("#")
            name = named[len(key) + 1 :]
            if series is not None and name != series:
                continue
            if kind == "head":
                heads[name] = Head(key, name, int(item["start"]["N"]), int(item["last"]["N"]))
            else:
                number = int(item[SERIES_SORT_KEY]["N"])
                first_entries[name] = min(number, first_entries.get(name, number))
        for name, first in first_entries.items():  # an entry below the recorded start is audited too
            head = heads.get(name, Head(key, name, first, first - 1))
            heads[name] = replace(head, start=min(head.start, first))
        return sorted(heads.values(), key=lambda head: head.series)

    def entries(self, head: Head) -> Iterator[Entry]:
        return SeriesStore(self.client, self.table).entries_after(head.key, head.series, head.start - 1, EVERY_ENTRY)

    def audit(self, key: str, series: str | None = None) -> list[SeriesAudit]:
        return [audit(head, self.entries(head)) for head in self.heads(key, series)]


def jsonl(entries: Iterable[Entry]) -> Iterator[str]:
    """A JSON object per entry, UTF-8; a lone surrogate (docs/reference/series.md#text-that-is-not-unicode) escaped."""
    for entry in entries:
        yield printable(json.dumps(entry.to_json(), ensure_ascii=False, sort_keys=True))


def csv_lines(entries: Iterable[Entry]) -> Iterator[str]:
    yield ",".join(CSV_COLUMNS)  # names CSV needs no quotes for
    for entry in entries:
        row: dict[str, Any] = dict(entry.to_json())
        voided = row.pop("voided") or {}
        cells = {**row, **{column: voided.get(name) for name, column in VOID_COLUMNS.items()}}
        buffer = io.StringIO()  # a row's line: None and a missing `id` as empty cells
        csv.DictWriter(buffer, CSV_COLUMNS, lineterminator="").writerow(cells)
        yield printable(buffer.getvalue())


def printable(text: str) -> str:
    """`text` as UTF-8 can carry it, a lone surrogate as `\\udXXX`: printing never fails on what is stored."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _numbers(numbers: list[int], shown: int = 50) -> str:
    listed = ", ".join(str(n) for n in numbers[:shown])
    return listed if len(numbers) <= shown else f"{listed} ... ({len(numbers)} in all)"
