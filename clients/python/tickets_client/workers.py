"""Worker-id leases and a Snowflake-style id generator on one (docs/reference/clients.md). The safe end is timed from
when the grant's request was SENT, never from the service's `expiresAt` (docs/explanation/worker-leases.md)."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import TypeGuard

from .client import TicketsClient, WorkerGrant
from .errors import ClockRollback, LeaseLost, TicketsError

DEFAULT_RENEW_FRACTION = 1 / 3
MIN_MARGIN_SECONDS = 1.0
MARGIN_FRACTION = 0.1  # of the ttl: the default margin is the larger of the two
RENEW_RETRY_SECONDS = 1.0  # after a renewal that got no answer, the next try
DEFAULT_EPOCH_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z: with 41 bits of milliseconds, ids last until 2094
DEFAULT_TIME_BITS, DEFAULT_WORKER_BITS, DEFAULT_SEQUENCE_BITS = 41, 10, 12
ID_BITS = 63  # a signed 64-bit integer's, so ids stay positive in every language and database
DEFAULT_MAX_ROLLBACK_SECONDS = 1.0  # how far back the wall clock may step before the generator raises
_process = [os.getpid()]  # this process's id, noted again in a forked child: a lease checks it with no syscall
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=lambda: _process.__setitem__(0, os.getpid()))


def _renewal_refusal(ttl: float, margin: float, fraction: float) -> str | None:
    """Why a lease of these would be lost to one unanswered renewal (None: its retry comes before the safe end)."""
    if margin >= ttl:
        return f"a margin of {margin:g} s leaves nothing of a {ttl:g} s ttl"
    renews = fraction * ttl
    retries = renews + min(RENEW_RETRY_SECONDS, renews)
    if retries <= ttl - margin:
        return None
    return (
        f"renew_fraction {fraction:g} renews {renews:g} s into a {ttl:g} s ttl and retries at {retries:g} s, past its "
        f"safe end at {ttl - margin:g} s (the ttl less a margin of {margin:g} s): one unanswered renewal would lose it"
    )


class WorkerLease(contextlib.AbstractContextManager["WorkerLease"]):
    """One worker id of `pool`, acquired at once, renewed by a daemon thread (or `renew_due()`) until `close()`."""

    def __init__(
        self,
        client: TicketsClient,
        pool: str,
        owner: str | None = None,
        *,
        renew_fraction: float = DEFAULT_RENEW_FRACTION,
        margin_seconds: float | None = None,
        on_lost: Callable[[LeaseLost], None] | None = None,
        idempotency_key: str | None = None,
        monotonic: Callable[[], float] | None = None,
        background: bool = True,
    ):
        """`idempotency_key`: your own, kept across a restart to get the same grant back (docs/reference/clients.md)."""
        if not 0 < renew_fraction < 1:
            raise ValueError(f"renew_fraction must be between 0 and 1, got {renew_fraction}")
        if margin_seconds is not None and not margin_seconds >= 0:
            raise ValueError(f"margin_seconds must be 0 or more, got {margin_seconds}")
        self.pool = pool
        monotonic = monotonic or _since_boot
        self._client, self._monotonic, self._on_lost, self._pid = client, monotonic, on_lost, _process[0]
        self._fraction, self._margin = renew_fraction, margin_seconds
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._lost: LeaseLost | None = None
        self._closed = False
        sent = monotonic()
        grant = client.acquire_worker(pool, owner, idempotency_key=idempotency_key)
        if idempotency_key is not None:
            sent = monotonic()
            try:
                grant = client.renew_worker(pool, grant.worker, grant.epoch)
            except LeaseLost:  # the key's old grant, released or expired since: a fresh one, under a new key
                sent = monotonic()
                grant = client.acquire_worker(pool, owner)
        self.grant = grant  # the last grant or renewal, lost or not (for logs: `worker` is checked)
        self.safe_end = 0.0  # the monotonic time until which the id is this process's, unless renewed before it
        self._renew_at = 0.0
        if (refused := _renewal_refusal(grant.ttl_seconds, self.margin_seconds, renew_fraction)) is not None:
            with contextlib.suppress(TicketsError):  # unreleased, the id expires at its ttl: the refusal is the news
                client.release_worker(pool, grant.worker, grant.epoch)
            raise ValueError(refused)
        self._extend(grant, sent)
        self._thread = threading.Thread(target=self._renew_until_stopped, name="tickets-worker-lease", daemon=True)
        if background:
            self._thread.start()

    @property
    def worker(self) -> int:
        """The worker id, while it is this process's: raises LeaseLost after a loss (RuntimeError once closed)."""
        self.check()
        return self.grant.worker

    @property
    def epoch(self) -> int:
        return self.grant.epoch

    @property
    def margin_seconds(self) -> float:
        ttl = self.grant.ttl_seconds
        return self._margin if self._margin is not None else max(MIN_MARGIN_SECONDS, MARGIN_FRACTION * ttl)

    @property
    def lost(self) -> bool:
        return self._loss() is not None

    @functools.cached_property
    def size(self) -> int:
        """The pool's size (read once, from `GET /_workers/{pool}`)."""
        return int(self._client.list_workers(self.pool)["size"])

    def check(self) -> None:
        """Raises LeaseLost once the lease is lost, RuntimeError once closed; else nothing (no network)."""
        if self._closed:
            raise RuntimeError("this WorkerLease is closed")
        if (loss := self._loss()) is not None:
            raise loss

    def renew_due(self) -> float | None:
        """Renew if a renewal is due; the seconds until the next is (None once lost or closed)."""
        if self._closed or self._loss() is not None:
            return None
        now = self._monotonic()
        if now < self._renew_at:
            return self._renew_at - now
        grant = self.grant
        try:
            renewed = self._client.renew_worker(self.pool, grant.worker, grant.epoch)
        except LeaseLost as err:
            self._lose(err)
        except TicketsError as err:
            if err.status is not None and 400 <= err.status < 500 and err.status != 429:
                self._lose(LeaseLost(err.status, err.code, f"the renewal was refused: {err.message}"))
            else:
                with self._lock:  # no answer, or the service busy: try again before the safe end
                    self._renew_at = now + min(RENEW_RETRY_SECONDS, self._fraction * grant.ttl_seconds)
        else:
            self._extend(renewed, now)
        return None if self._loss() is not None else max(0.0, self._renew_at - self._monotonic())

    def close(self) -> bool:
        """Stop renewing and release the worker id; whether the service released it (else it expires at its ttl)."""
        if _process[0] != self._pid:  # the parent's id: never released from here (and the lock may be a held copy)
            self._closed = True
            return False
        with self._lock:
            if self._closed:
                return False
            self._closed = True
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        if self._loss() is None:
            with contextlib.suppress(TicketsError):  # unreleased, the id expires at its ttl
                return self._client.release_worker(self.pool, self.grant.worker, self.grant.epoch)
        return False

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _extend(self, grant: WorkerGrant, sent: float) -> None:
        """A grant or renewal of the request sent at `sent`: the new safe end, unless the old one has passed."""
        if (grant.pool, grant.worker, grant.epoch) != (self.pool, self.grant.worker, self.grant.epoch):
            raise TicketsError(200, "bad_response", f"asked for a lease of {self.pool!r}, got {grant!r}")
        if self._loss() is not None:
            return
        with self._lock:
            if self.safe_end and self._monotonic() >= self.safe_end:
                return
            self.grant = grant
            self.safe_end = sent + grant.ttl_seconds - self.margin_seconds
            self._renew_at = sent + self._fraction * grant.ttl_seconds

    def _loss(self) -> LeaseLost | None:
        """The loss, noticed now if the safe end has passed; in a forked child, always (no lock, no on_lost)."""
        if _process[0] != self._pid:
            return LeaseLost(None, "lease_lost", f"worker {self.grant.worker} is process {self._pid}'s, not a fork's")
        if self._lost is None and self.safe_end and self._monotonic() >= self.safe_end:
            self._lose(LeaseLost(None, "lease_lost", f"the safe end of worker {self.grant.worker} passed unrenewed"))
        return self._lost

    def _lose(self, loss: LeaseLost) -> None:
        with self._lock:
            if self._lost is not None:
                return
            self._lost = loss
        self._stop.set()
        if self._on_lost is not None:
            self._on_lost(loss)

    def _renew_until_stopped(self) -> None:
        delay = self.renew_due()
        while delay is not None and not self._stop.wait(min(delay, max(0.0, self.safe_end - self._monotonic()))):
            delay = self.renew_due()


class Snowflake:
    """Snowflake-style ids on a WorkerLease, thread-safe, never one twice (docs/reference/clients.md)."""

    def __init__(
        self,
        lease: WorkerLease,
        *,
        epoch_ms: int = DEFAULT_EPOCH_MS,
        time_bits: int = DEFAULT_TIME_BITS,
        worker_bits: int = DEFAULT_WORKER_BITS,
        sequence_bits: int = DEFAULT_SEQUENCE_BITS,
        max_rollback_seconds: float = DEFAULT_MAX_ROLLBACK_SECONDS,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        layout = {"time_bits": time_bits, "worker_bits": worker_bits, "sequence_bits": sequence_bits}
        if any(not _whole(bits) or bits < 0 for bits in layout.values()) or time_bits < 1:
            raise ValueError(f"bit counts are whole numbers, time_bits at least 1: {layout}")
        if sum(layout.values()) > ID_BITS:
            raise ValueError(f"{time_bits} + {worker_bits} + {sequence_bits} bits do not fit {ID_BITS}")
        if not max_rollback_seconds >= 0:
            raise ValueError(f"max_rollback_seconds must be 0 or more, got {max_rollback_seconds}")
        if lease.size > 1 << worker_bits:
            raise ValueError(f"pool {lease.pool!r} holds {lease.size} worker ids: more than {worker_bits} bits hold")
        self.lease, self.epoch_ms = lease, epoch_ms
        self._time_limit, self._sequence_limit = 1 << time_bits, 1 << sequence_bits
        self._time_shift, self._worker_shift = worker_bits + sequence_bits, sequence_bits
        self._max_rollback_ms = max_rollback_seconds * 1000
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._last_ms, self._sequence = -1, 0

    def next(self) -> int:
        self.lease.check()  # before the lock: a forked child's copy of it may be held
        with self._lock:  # the state changes only once an id is made: a raise midway leaves it as it was
            now = self._millisecond()
            sequence = self._sequence + 1 if now == self._last_ms else 0
            while sequence >= self._sequence_limit:  # this millisecond's ids are used up: the next one
                self._sleep(0.0005)
                if (now := self._millisecond()) > self._last_ms:
                    sequence = 0
            elapsed = now - self.epoch_ms
            if not 0 <= elapsed < self._time_limit:
                raise ValueError(f"{now} ms is outside the {self._time_limit} ms from epoch_ms {self.epoch_ms}")
            worker = self.lease.worker  # checked again after any wait
            self._last_ms, self._sequence = now, sequence
            return elapsed << self._time_shift | worker << self._worker_shift | sequence

    def _millisecond(self) -> int:
        """Now in whole milliseconds, never before the last id's: a clock gone back is waited for up to the bound."""
        now = int(self._clock() * 1000)
        while now < self._last_ms:
            behind = self._last_ms - now
            if behind > self._max_rollback_ms:
                said = f"the clock went back {behind} ms, past max_rollback_seconds ({self._max_rollback_ms:g} ms)"
                raise ClockRollback(None, "clock_rollback", said)
            self._sleep(behind / 1000)
            now = int(self._clock() * 1000)
        return now


def _since_boot() -> float:
    """Seconds on CLOCK_BOOTTIME (Linux), which counts a suspend; time.monotonic stops in one."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.monotonic() if boottime is None else time.clock_gettime(boottime)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
