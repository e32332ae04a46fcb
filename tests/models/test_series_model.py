"""The series guarantee as a stateful model: whatever requests do, interleave and crash, every number
has exactly one journal entry, and every retry gets its first attempt's number.

Each request runs in its own thread, gated before every DynamoDB call: the machine lets one request at a
time make its next call (moto and dynalite each serialise calls anyway; the gate decides the order), so
requests interleave call by call. A crash stops a request between two calls, never to resume: before its
next call, or after it (the call happened, its answer was lost). Time passes: a request past its deadline
makes no more calls (as timing.DeadlineBoundClient refuses them), and its lock expires after; but a call
that passed that check and then paused (a stalled call) lands whenever it resumes, past any lock.
After every step the audit (tickets_admin.journal, what `tickets_admin audit` runs) must be clean and:
- every Idempotency-Key holds at most one entry (no number spent on a retried request);
- every answer of a key is that entry, the same for all its answers.
At the end every live request is run to its end, every unanswered key retried after the locks expire,
and each must get a number: then every entry is the number of exactly one key, which answered it.

`TICKETS_MODEL_EXAMPLES=500 pytest tests/models/test_series_model.py` runs more histories than `make test`'s.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from moto import mock_aws

from common import model_settings
from local_support import running_dynalite
from tickets.errors import TicketsError, Unavailable
from tickets.series.config import SeriesConfig
from tickets.series.journal import Entry, IssueRequest
from tickets.series.store import LOCK_MARGIN_SECONDS, SeriesStore
from tickets.tables import create_series_table_arguments
from tickets.timing import REQUEST_BUDGET_SECONDS, WORST_CASE_CALL_SECONDS
from tickets_admin.journal import SeriesTable, audit


@pytest.fixture(scope="module")
def dynalite():
    """A dynalite process of this module's own (local_support.running_dynalite)."""
    with running_dynalite() as endpoint:
        yield endpoint


EXAMPLES = int(os.environ.get("TICKETS_MODEL_EXAMPLES", "40"))
KEY = "invoices"
CALLER = "arn:aws:iam::123456789012:role/billing"
SERIES_NAMES = ("2026", "2027")  # a retry may come in the next period: it keeps its first attempt's series
CONFIG = SeriesConfig(start=1, max=40)  # small enough that a long history reaches it


class Crashed(BaseException):
    """The function stopped here (crash, timeout, kill): nothing of the request runs after this."""


class Clock:
    def __init__(self) -> None:
        self.millis = 1_800_000_000_000

    def __call__(self) -> int:
        return self.millis


@dataclass
class Request:
    """One attempt: an issue or a void, in its own thread, paused before each DynamoDB call."""

    name: str
    idempotency_key: str | None  # None: a void
    work: Callable[[Any], Any]  # given the gated client, does the request
    deadline_millis: int
    outcome: Any = None  # the Entry answered, a TicketsError, or Crashed
    done: bool = False
    pending: str | None = None  # the call it is paused before
    _go: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    _paused: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    _command: str = "call"
    thread: threading.Thread | None = None


class GatedClient:
    """The request's DynamoDB client: each call waits for the machine's word, and the deadline."""

    def __init__(self, client: Any, request: Request, clock: Clock):
        self._client, self._request, self._clock = client, request, clock

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        call = getattr(self._client, operation)
        request = self._request

        def gated(**arguments: Any) -> Any:
            request.pending = operation
            request._paused.release()
            request._go.acquire()
            request.pending = None
            if request._command == "crash_before":
                raise Crashed
            # timing.DeadlineBoundClient's refusal; a stalled call passed that check before it paused
            # (SIGSTOP, a laptop asleep, a starved CPU) and lands whenever it resumes, past any lock.
            if self._clock() > request.deadline_millis and request._command != "call_stalled":
                raise Unavailable("out of time")
            try:
                return call(**arguments)
            finally:
                if request._command == "crash_after":
                    raise Crashed  # the call happened; its answer is lost  # noqa: B012

        return gated


class SeriesModel(RuleBasedStateMachine):
    client: Any = None  # set by each test: moto's or dynalite's

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.table = f"series-{uuid.uuid4().hex[:12]}"
        self.client.create_table(**create_series_table_arguments(self.table))
        self.client.get_waiter("table_exists").wait(TableName=self.table, WaiterConfig={"Delay": 0.1})
        self.tokens = itertools.count()
        self.names = itertools.count()
        self.live: list[Request] = []
        self.refs: dict[str, str] = {}  # Idempotency-Key -> the ref its requests carry
        self.answers: dict[str, list[Entry]] = {}  # Idempotency-Key -> every answer it got
        self.issued_numbers: list[tuple[str, int]] = []
        # Two warm functions: each remembers the marks it saw (SeriesStore's `marks`), so a request may
        # claim from a stale mark, as a function does whose neighbour issued meanwhile.
        self.functions: tuple[dict[tuple[str, str], int], ...] = ({}, {})

    def store(self, client: Any, function: int = 0) -> SeriesStore:
        marks = self.functions[function]
        return SeriesStore(
            client, self.table, now_millis=self.clock, token=lambda: f"t{next(self.tokens)}", marks=marks
        )

    def start(self, idempotency_key: str | None, work: Callable[[Any], Any]) -> Request:
        deadline = self.clock() + int((REQUEST_BUDGET_SECONDS - WORST_CASE_CALL_SECONDS) * 1000)
        request = Request(f"r{next(self.names)}", idempotency_key, work, deadline)
        gated = GatedClient(self.client, request, self.clock)

        def run() -> None:
            try:
                request.outcome = work(gated)
            except (TicketsError, Crashed) as err:
                request.outcome = err
            finally:
                request.done = True
                request._paused.release()

        request.thread = threading.Thread(target=run, daemon=True)
        request.thread.start()
        self.wait(request)
        return request

    def wait(self, request: Request) -> None:
        """Until the request is paused before its next call, or done."""
        request._paused.acquire()
        if request.done:
            assert request.thread is not None
            request.thread.join()
            if request in self.live:
                self.live.remove(request)
            if isinstance(request.outcome, Entry) and request.idempotency_key is not None:
                self.answers.setdefault(request.idempotency_key, []).append(request.outcome)
                self.issued_numbers.append((request.outcome.series, request.outcome.ticket))
        elif request not in self.live:
            self.live.append(request)

    def command(self, request: Request, command: str) -> None:
        request._command = command
        request._go.release()
        self.wait(request)

    def issue(self, idempotency_key: str, series: str, function: int = 0) -> Request:
        ref = self.refs[idempotency_key]
        lock = REQUEST_BUDGET_SECONDS

        def work(client: Any) -> Entry:
            request = IssueRequest(KEY, CONFIG, series, CALLER, idempotency_key, ref, lock)
            return self.store(client, function).issue(request)[0]

        return self.start(idempotency_key, work)

    @initialize()
    def empty(self) -> None:
        pass

    @rule(series=st.sampled_from(SERIES_NAMES), function=st.sampled_from([0, 1]))
    def new_request(self, series: str, function: int) -> None:
        idempotency_key = f"k{len(self.refs)}"
        self.refs[idempotency_key] = f"order {len(self.refs)}"
        self.issue(idempotency_key, series, function)

    @precondition(lambda self: self.refs)
    @rule(data=st.data(), series=st.sampled_from(SERIES_NAMES), function=st.sampled_from([0, 1]))
    def retry(self, data: st.DataObject, series: str, function: int) -> None:
        self.issue(data.draw(st.sampled_from(sorted(self.refs))), series, function)

    @precondition(lambda self: self.live)
    @rule(
        data=st.data(),
        command=st.sampled_from(["call", "call", "call", "crash_before", "crash_after", "call_stalled"]),
    )
    def advance(self, data: st.DataObject, command: str) -> None:
        """A paused request makes its next call, or stops there (before the call, or after it: its answer lost),
        or makes it whatever the time (it was checked before a pause: the call lands late)."""
        self.command(data.draw(st.sampled_from(self.live)), command)

    @precondition(lambda self: self.issued_numbers)
    @rule(data=st.data())
    def void(self, data: st.DataObject) -> None:
        series, number = data.draw(st.sampled_from(self.issued_numbers))
        self.start(None, lambda client: self.store(client).void(KEY, series, number, CALLER, "cancelled"))

    @rule(seconds=st.sampled_from([1, 4, 11]))
    def time_passes(self, seconds: int) -> None:
        self.clock.millis += seconds * 1000

    @invariant()
    def every_number_has_exactly_one_entry(self) -> None:
        self._checked_entries()

    def _checked_entries(self) -> dict[str, list[Entry]]:
        """The journal's entries by Idempotency-Key, read once, after its checks: each series' audit is clean,
        each request holds one entry, and every answer given is the entry held."""
        table = SeriesTable(self.client, self.table)
        holders: dict[str, list[Entry]] = {}
        for head in table.heads(KEY):
            # What table.audit(KEY, head.series) gives (`tickets_admin audit`): the same audit of the same head and
            # entries, read once here for both checks instead of a Scan and a Query more for each series.
            entries = list(table.entries(head))
            audited = audit(head, entries)
            assert audited.clean, audited.lines()
            for entry in entries:
                holders.setdefault(entry.idempotency_key, []).append(entry)
                assert entry.ref == self.refs[entry.idempotency_key] and entry.caller == CALLER
        for idempotency_key, entries in holders.items():
            assert len(entries) == 1, f"{idempotency_key} holds {[(e.series, e.ticket) for e in entries]}"
        for idempotency_key, answers in self.answers.items():
            held = [(e.series, e.ticket) for e in holders.get(idempotency_key, [])]
            assert all([(a.series, a.ticket)] == held for a in answers), (idempotency_key, answers, held)
        return holders

    def teardown(self) -> None:
        """Run everything to its end; then every key must get its number, and every entry be answered."""
        try:
            while self.live:
                self.command(self.live[0], "call")
            self.clock.millis += 60_000  # every lock expired
            for idempotency_key in sorted(self.refs):
                if idempotency_key in self.answers:
                    continue
                request = self.issue(idempotency_key, SERIES_NAMES[0])
                while not request.done:
                    self.command(request, "call")
                outcome = request.outcome
                assert isinstance(outcome, Entry) or getattr(outcome, "code", None) == "exhausted", outcome
            for idempotency_key, entries in self._checked_entries().items():
                assert idempotency_key in self.answers, f"{entries[0]} was never answered"
        finally:
            for request in list(self.live):  # only after a failure: end the threads
                self.command(request, "crash_before")
            self.client.delete_table(TableName=self.table)


def _run(client: Any, examples: int) -> None:
    SeriesModel.client = client
    SeriesModel.TestCase.settings = model_settings(examples, 30)
    SeriesModel.TestCase().runTest()


def _walk(model: SeriesModel, request: Request, commands: list[str]) -> None:
    for command in commands:
        if request.done:
            return
        model.command(request, command)


def _calls_of_one_number() -> tuple[list[str | None], list[str | None]]:
    """The calls of a series' first number, and of the next one from the same (warm) function."""
    model = SeriesModel()
    calls: tuple[list[str | None], list[str | None]] = ([], [])
    for idempotency_key, recorded in zip(("k-first", "k-second"), calls, strict=True):
        model.refs[idempotency_key] = "order"
        request = model.issue(idempotency_key, SERIES_NAMES[0])
        while not request.done:
            recorded.append(request.pending)
            model.command(request, "call")
    model.teardown()
    return calls


@pytest.mark.parametrize("lose_answer", [False, True], ids=["crash before the call", "answer lost"])
@pytest.mark.parametrize("warm", [False, True], ids=["cold function", "warm function"])
def test_every_crash_window_of_one_number(lose_answer: bool, warm: bool) -> None:
    """The function stops before (or right after) each DynamoDB call of a number, with a number already
    issued and another request coming behind it (from a function whose mark is stale when the stopped one
    was cold); the next request and the retry leave the journal clean, the retry with the number its
    first attempt took if it took one."""
    with mock_aws():
        SeriesModel.client = boto3.client("dynamodb", region_name="us-east-1")
        calls, warm_calls = _calls_of_one_number()
        assert calls == ["get_item", "put_item", "put_item", "update_item"]  # docs/explanation/series.md: four calls
        assert warm_calls == ["put_item", "put_item", "update_item"]  # three: the function knows the mark
        walked = warm_calls if warm else calls
        for window in range(len(walked)):
            model = SeriesModel()
            for idempotency_key in ("k0", "k1", "k2"):
                model.refs[idempotency_key] = f"order {idempotency_key}"
            _walk(model, model.issue("k0", "2026"), ["call"] * 4)  # number 1, from function 0
            first = model.issue("k1", "2026", function=0 if warm else 1)
            _walk(model, first, ["call"] * window + ["crash_after" if lose_answer else "crash_before"])
            model.every_number_has_exactly_one_entry()
            other = model.issue("k2", "2026")
            while not other.done:  # it repairs a mark the crash left behind, and takes the next number
                model.command(other, "call")
            assert isinstance(other.outcome, Entry), other.outcome
            model.every_number_has_exactly_one_entry()
            model.teardown()  # the retry after the lock expired: k1 gets a number, the one it took if any
            entry_put = walked.index("put_item") + 1  # the request item's put, then the entry's
            took_its_number = window >= (entry_put if lose_answer else entry_put + 1)
            assert [a.ticket for a in model.answers["k1"]] == ([2] if took_its_number else [3])


def test_series_model_on_moto() -> None:
    with mock_aws():
        _run(boto3.client("dynamodb", region_name="us-east-1"), EXAMPLES)


@pytest.mark.slow
def test_series_model_on_dynalite(dynalite) -> None:
    client = boto3.client("dynamodb", endpoint_url=dynalite, region_name="us-east-1")
    _run(client, max(EXAMPLES // 3, 5))


def test_a_retry_while_the_first_attempt_runs_waits_for_it() -> None:
    """A retry that comes while the first attempt is paused before one of its calls, and makes all its
    own calls there, is told 409 in_progress while the first attempt holds the request's lock without
    an entry, and answered the entry otherwise; the key holds one entry, which every answer names."""
    with mock_aws():
        SeriesModel.client = boto3.client("dynamodb", region_name="us-east-1")
        for window in range(1, 4):  # after the first attempt's request item exists
            model = SeriesModel()
            model.refs["k0"] = "order 0"
            first = model.issue("k0", "2026")
            _walk(model, first, ["call"] * window)
            retry = model.issue("k0", "2026")
            while not retry.done:
                model.command(retry, "call")
            model.every_number_has_exactly_one_entry()
            while not first.done:
                model.command(first, "call")
            model.every_number_has_exactly_one_entry()
            assert isinstance(first.outcome, Entry)
            # Before its second call the first attempt has no request item: the retry is the first, and
            # the first attempt the retry (a replay). After its third its entry exists: a replay.
            expected = "in_progress" if window == 2 else None
            assert getattr(retry.outcome, "code", None) == expected, (window, retry.outcome)
            assert [a.ticket for a in model.answers["k0"]] == [1] * len(model.answers["k0"])
            model.teardown()


def _stalled_first_attempt(client: Any) -> None:
    """The review's history: the first attempt is paused before its entry's put until its lock expired; the
    retry takes over and gets as far as its own put; then the first attempt's put lands. The key must still
    hold one entry, and the retry answer it."""
    SeriesModel.client = client
    model = SeriesModel()
    model.refs["k0"] = "order 0"
    first = model.issue("k0", "2026")
    _walk(model, first, ["call", "call"])  # the head's read, the request item's put
    assert first.pending == "put_item"  # its entry's put: paused (SIGSTOP) after its deadline check
    model.clock.millis += int((REQUEST_BUDGET_SECONDS + LOCK_MARGIN_SECONDS) * 1000) + 1  # past lockedUntil
    retry = model.issue("k0", "2026")
    calls = []
    while not ("put_item" in calls and retry.pending == "put_item"):  # after its request's put: its entry's
        calls.append(retry.pending)
        model.command(retry, "call")
        assert not retry.done, retry.outcome
    model.command(first, "call_stalled")  # the first attempt resumes: its put lands now
    while not retry.done:
        model.command(retry, "call")
    while not first.done:
        model.command(first, "call")
    model.every_number_has_exactly_one_entry()
    assert isinstance(retry.outcome, Entry) and retry.outcome.ticket == 1  # the first attempt's entry
    assert isinstance(first.outcome, Unavailable)  # out of time once it resumed: its next call refused
    model.teardown()


def test_a_first_attempt_stalled_past_its_lock_takes_no_second_number_on_moto() -> None:
    with mock_aws():
        _stalled_first_attempt(boto3.client("dynamodb", region_name="us-east-1"))


def test_a_first_attempt_stalled_past_its_lock_takes_no_second_number_on_dynalite(dynalite) -> None:
    _stalled_first_attempt(boto3.client("dynamodb", endpoint_url=dynalite, region_name="us-east-1"))
