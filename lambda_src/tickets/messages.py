"""The API's JSON messages as types, from which tickets_local/openapi.py derives its schemas (a string in `Annotated`
names a scalar's). No `from __future__ import annotations`: TypedDict reads NotRequired from evaluated annotations."""

from collections.abc import Mapping
from typing import Annotated, Literal, NotRequired, TypedDict

from .settings import CounterConfig

Key = Annotated[str, "Key"]
Ticket = Annotated[int, "Ticket"]
OpaqueId = Annotated[str, "OpaqueId"]
Count = Annotated[int, "Count"]
BlockCount = Annotated[int, "BlockCount"]
Step = Annotated[int, "Step"]
SeriesName = Annotated[str, "SeriesName"]
Number = Annotated[int, "Number"]  # a series number
Time = Annotated[str, "Time"]
PageSize = Annotated[int, "PageSize"]
IdempotencyKey = Annotated[str, "IdempotencyKey"]
Reason = Annotated[str, "Reason"]
Ref = Annotated[str, "Ref"]
Worker = Annotated[int, "Worker"]
Epoch = Annotated[int, "Epoch"]
Millis = Annotated[int, "Millis"]  # ms since the Unix epoch
Owner = Annotated[str, "Owner"]


class TicketRequest(TypedDict, total=False):
    key: Key
    count: Count


class BlockRequest(TypedDict, total=False):
    key: Key
    count: BlockCount


class SeriesRequest(TypedDict, total=False):
    ref: Ref


class VoidRequest(TypedDict):
    series: SeriesName
    ticket: Number
    reason: Reason


class Issued(TypedDict):
    key: Key
    ticket: Ticket
    tickets: NotRequired[list[Ticket]]


class IssuedIds(TypedDict):
    key: Key
    id: OpaqueId
    ids: NotRequired[list[OpaqueId]]


IssuedAnswer = Issued | IssuedIds


class Block(TypedDict):
    key: Key
    first: Ticket
    last: Ticket
    step: Step
    count: BlockCount


class LaneState(TypedDict):
    counter: str
    lane: int
    first: Ticket
    step: int
    last: Ticket | None


class RegionSlot(TypedDict):
    slot: int
    slots: int


class EpochState(TypedDict):
    number: int
    fence: Ticket
    start: Ticket


class OpaqueState(TypedDict):
    keyVersion: int
    idsPerVersion: int
    keyVersionsHeld: list[int] | None


class CounterState(TypedDict):
    key: Key
    last: Ticket | None
    step: int
    config: Annotated[Mapping[str, int], CounterConfig]
    region: RegionSlot
    lanes: list[LaneState]
    epoch: NotRequired[EpochState]
    opaque: NotRequired[OpaqueState]


class Health(TypedDict):
    status: Literal["ok"]
    version: str
    region: str | None
    slot: int
    slots: int


class Error(TypedDict):
    error: str
    message: str


class SeriesNumber(TypedDict):
    key: Key
    series: SeriesName
    ticket: Number
    id: NotRequired[str]


class Void(TypedDict):
    by: str
    at: Time
    reason: Reason


class JournalEntry(SeriesNumber):
    time: Time
    caller: str
    idempotencyKey: str
    ref: Ref | None
    voided: Void | None


class JournalPage(TypedDict):
    key: Key
    series: SeriesName
    entries: list[JournalEntry]
    next: Number | None


class WorkerRequest(TypedDict, total=False):
    owner: Owner


class LeaseRequest(TypedDict):
    epoch: Epoch


class WorkerLease(TypedDict):
    pool: Key
    worker: Worker
    epoch: Epoch
    expiresAt: Millis
    ttlSeconds: int


class WorkerRelease(TypedDict):
    pool: Key
    worker: Worker
    epoch: Epoch
    released: bool
    message: NotRequired[str]


class LiveLease(TypedDict):
    worker: Worker
    epoch: Epoch
    owner: Owner | None
    expiresAt: Millis


class WorkerPool(TypedDict):
    pool: Key
    size: int
    ttlSeconds: int
    leases: list[LiveLease]
