"""The Python client's WorkerLease and Snowflake (clients/python/tickets_client/workers.py) on a manual clock and an
in-memory pool that keeps the lease protocol's rules: when renewals go out, the safe end timed from the send, loss
on a 409, on a safe end passed (a suspend counted) and in a forked child, release on close, a replayed grant
released since, the bit layout and its checks, a clock gone back (also mid-wait), a millisecond's sequence used up.
Against the real server: tests/functional/workers/test_worker_clients.py."""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Any

import pytest

from tickets_client.client import WorkerGrant
from tickets_client.errors import ClockRollback, LeaseLost, PoolFull, TicketsError
from tickets_client.workers import Snowflake, WorkerLease

EPOCH_MS = 1_735_689_600_000


class ManualClock:
    """A monotonic and a wall clock that move together, only when told to (or when a fake sleep waits)."""

    def __init__(self) -> None:
        self.monotonic_now, self.wall_now = 1000.0, EPOCH_MS / 1000 + 3600
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.monotonic_now

    def wall(self) -> float:
        return self.wall_now

    def advance(self, seconds: float) -> None:
        self.monotonic_now += seconds
        self.wall_now += seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)


class MemoryPool:
    """The lease protocol in memory, on the clock's monotonic time: the lowest free id, an epoch that grows with
    each grant, 409 for a renewal of an expired or superseded lease. `latency`: seconds each call takes;
    `unreachable`: calls fail as an unanswered request does."""

    def __init__(self, clock: ManualClock, size: int = 4, ttl: int = 30):
        self.clock, self.size, self.ttl = clock, size, ttl
        self.leases: dict[int, tuple[int, float]] = {}  # worker -> (epoch, expiry)
        self.epochs: dict[int, int] = {}
        self.calls: list[tuple[str, float]] = []
        self.latency, self.unreachable = 0.0, False
        self.granted: dict[str, WorkerGrant] = {}  # an Idempotency-Key's grant, replayed for the same key
        self.keys: list[str | None] = []

    def _call(self, name: str) -> float:
        self.calls.append((name, self.clock.monotonic()))
        self.clock.advance(self.latency)
        if self.unreachable:
            raise TicketsError(None, "unreachable", "no answer")
        return self.clock.monotonic()

    def _answer(self, worker: int) -> WorkerGrant:
        epoch, expiry = self.leases[worker]
        return WorkerGrant("pool", worker, epoch, int(expiry * 1000), self.ttl)

    def acquire_worker(self, pool: str, owner: str | None = None, *, idempotency_key: str | None = None) -> WorkerGrant:
        now = self._call("acquire")
        self.keys.append(idempotency_key)
        if idempotency_key in self.granted:
            return self.granted[idempotency_key]
        free = [w for w in range(self.size) if w not in self.leases or self.leases[w][1] <= now]
        if not free:
            raise PoolFull(503, "pool_full", "full", min(expiry for _, expiry in self.leases.values()) - now)
        self.epochs[free[0]] = self.epochs.get(free[0], 0) + 1
        self.leases[free[0]] = (self.epochs[free[0]], now + self.ttl)
        if idempotency_key is not None:
            self.granted[idempotency_key] = self._answer(free[0])
        return self._answer(free[0])

    def renew_worker(self, pool: str, worker: int, epoch: int) -> WorkerGrant:
        now = self._call("renew")
        if self.leases.get(worker, (0, 0.0))[0] != epoch or self.leases[worker][1] <= now:
            raise LeaseLost(409, "lease_lost", "expired or granted again")
        self.leases[worker] = (epoch, now + self.ttl)
        return self._answer(worker)

    def release_worker(self, pool: str, worker: int, epoch: int) -> bool:
        self._call("release")
        if self.leases.get(worker, (0, 0.0))[0] != epoch:
            return False
        del self.leases[worker]
        return True

    def list_workers(self, pool: str) -> dict[str, Any]:
        return {"pool": pool, "size": self.size, "ttlSeconds": self.ttl, "leases": []}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def pool(clock: ManualClock) -> MemoryPool:
    return MemoryPool(clock)


def lease_on(pool: MemoryPool, clock: ManualClock, **options: Any) -> WorkerLease:
    return WorkerLease(pool, "pool", monotonic=clock.monotonic, background=False, **options)


def snowflake_on(lease: WorkerLease, clock: ManualClock, **options: Any) -> Snowflake:
    return Snowflake(lease, clock=clock.wall, sleep=clock.sleep, **options)


# --- the lease ------------------------------------------------------------------------------------


def test_renewals_go_out_every_third_of_the_ttl_and_the_safe_end_counts_from_each_send(pool, clock):
    lease = lease_on(pool, clock)
    start = clock.monotonic()
    assert lease.safe_end == start + 30 - 3  # the margin: max(1 s, 10% of 30 s)
    assert lease.renew_due() == pytest.approx(10)
    clock.advance(9.9)
    assert lease.renew_due() == pytest.approx(0.1) and pool.names() == ["acquire"]
    clock.advance(0.1)
    pool.latency = 2.0  # the answer comes 2 s after the request went out: the safe end counts from the send
    assert lease.renew_due() == pytest.approx(8)  # the next one a third of the ttl after this send
    assert pool.calls[-1] == ("renew", start + 10)
    assert lease.safe_end == start + 10 + 30 - 3


def test_the_safe_end_of_the_grant_counts_from_when_the_acquire_was_sent(pool, clock):
    pool.latency = 4.0
    sent = clock.monotonic()
    lease = lease_on(pool, clock, margin_seconds=0.5)
    assert lease.safe_end == sent + 30 - 0.5
    assert lease.margin_seconds == 0.5


def test_a_refused_renewal_loses_the_lease_for_good(pool, clock):
    losses: list[LeaseLost] = []
    lease = lease_on(pool, clock, on_lost=losses.append)
    ids = snowflake_on(lease, clock)
    ids.next()
    pool.leases[0] = (lease.epoch + 1, clock.monotonic() + 30)  # expired unseen and granted again
    clock.advance(10)
    assert lease.renew_due() is None
    assert lease.lost and len(losses) == 1 and losses[0].status == 409
    with pytest.raises(LeaseLost):
        _ = lease.worker
    with pytest.raises(LeaseLost):
        ids.next()
    assert lease.renew_due() is None and pool.names() == ["acquire", "renew"]  # no more renewals
    assert lease.close() is False and pool.names() == ["acquire", "renew"]  # nothing to release
    assert len(losses) == 1


def test_renewals_without_answers_lose_the_lease_when_the_safe_end_passes(pool, clock):
    losses: list[LeaseLost] = []
    lease = lease_on(pool, clock, on_lost=losses.append)
    ids = snowflake_on(lease, clock)
    pool.unreachable = True
    clock.advance(10)
    assert lease.renew_due() == pytest.approx(1)  # tried, no answer: again in a second
    clock.advance(1)
    assert lease.renew_due() == pytest.approx(1)
    clock.advance(15.5)
    assert not lease.lost and ids.next() > 0  # before the safe end (30 - 3 s after the acquire was sent)
    clock.advance(0.5)
    assert lease.lost and losses and losses[0].code == "lease_lost"  # noticed by whoever looks first
    with pytest.raises(LeaseLost):
        ids.next()
    pool.unreachable = False
    assert lease.renew_due() is None and pool.names().count("renew") == 2


def test_a_renewal_answered_after_the_safe_end_does_not_revive_the_lease(pool, clock):
    lease = lease_on(pool, clock)
    clock.advance(10)
    pool.latency = 20.0  # sent at 10 s, answered at 30 s: the safe end (27 s) passed meanwhile
    assert lease.renew_due() is None
    assert lease.lost


def test_a_renewal_after_failed_tries_keeps_the_lease(pool, clock):
    lease = lease_on(pool, clock)
    pool.unreachable = True
    clock.advance(10)
    lease.renew_due()
    pool.unreachable = False
    clock.advance(1)
    lease.renew_due()
    assert not lease.lost and lease.safe_end == clock.monotonic() + 27


def test_close_and_the_context_manager_release_the_worker_id(pool, clock):
    with lease_on(pool, clock) as lease:
        assert lease.worker == 0 and pool.leases
    assert pool.leases == {} and pool.names()[-1] == "release"
    with pytest.raises(RuntimeError, match="closed"):
        _ = lease.worker
    assert lease.close() is False  # once


def test_a_full_pool_raises_pool_full_with_its_retry_after(clock):
    pool = MemoryPool(clock, size=1)
    lease_on(pool, clock)
    clock.advance(5)
    with pytest.raises(PoolFull) as raised:
        lease_on(pool, clock)
    assert raised.value.status == 503 and raised.value.retry_after == 25


def test_an_own_idempotency_key_renews_at_once_so_an_old_replayed_grant_is_not_trusted(pool, clock):
    lease = lease_on(pool, clock, idempotency_key="order-service-7")
    assert pool.names() == ["acquire", "renew"] and not lease.lost


def test_a_replayed_grant_released_since_is_replaced_by_a_fresh_acquire_under_a_new_key(pool, clock):
    """A restart with its own key after the last holder released: the replay's renewal is refused, so one
    acquire under a new key, rather than a lease_lost on every restart while the key's record lasts."""
    first = lease_on(pool, clock, idempotency_key="order-service-7")
    first.close()
    again = lease_on(pool, clock, idempotency_key="order-service-7")
    assert pool.names()[-3:] == ["acquire", "renew", "acquire"]
    assert pool.keys == ["order-service-7", "order-service-7", None]  # None: the client's own new key
    assert not again.lost and again.epoch > first.epoch and again.safe_end == clock.monotonic() + 27
    assert again.renew_due() is not None and not again.lost


def test_the_default_monotonic_clock_counts_a_system_suspend(pool, clock, monkeypatch):
    """CLOCK_MONOTONIC stops while the machine is suspended, CLOCK_BOOTTIME does not: a suspend longer than the
    ttl must lose the lease on waking, not leave it with a safe end still ahead."""
    if not hasattr(time, "CLOCK_BOOTTIME"):
        pytest.skip("no CLOCK_BOOTTIME here")
    since_boot = [5000.0]
    monkeypatch.setattr(time, "monotonic", clock.monotonic)
    monkeypatch.setattr(time, "clock_gettime", lambda which: since_boot[0] if which == time.CLOCK_BOOTTIME else 0.0)
    lease = WorkerLease(pool, "pool", background=False)
    assert lease.safe_end == 5000 + 27 and not lease.lost
    since_boot[0] += 60  # suspended for a minute: the monotonic clock did not move
    assert lease.lost
    with pytest.raises(LeaseLost):
        _ = lease.worker


def test_a_forked_child_never_uses_the_parents_worker_id(pool, clock):
    """A pre-fork server (gunicorn --preload) copies the lease into each child, without its renewals: there
    the lease is lost (the generator stops, close releases nothing), while the parent keeps it."""
    lease = lease_on(pool, clock)
    ids = snowflake_on(lease, clock)
    ids.next()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        said = []
        try:
            for attempt in (lambda: lease.worker, ids.next, lease.check):
                try:
                    said.append(f"issued {attempt()}")
                except LeaseLost:
                    said.append("lost")
            said += [f"lost={lease.lost}", f"released={lease.close()}", f"calls={pool.names()}"]
        finally:
            os.write(write, ";".join(said).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        told = answer.read()
    assert os.waitpid(child, 0)[1] == 0
    assert told == "lost;lost;lost;lost=True;released=False;calls=['acquire']"
    assert lease.worker == 0 and not lease.lost and ids.next() > 0


@pytest.mark.parametrize("options", [{"renew_fraction": 0}, {"renew_fraction": 1}, {"margin_seconds": -1}])
def test_impossible_lease_options_are_refused(pool, clock, options):
    with pytest.raises(ValueError):
        lease_on(pool, clock, **options)


def test_a_margin_as_long_as_the_ttl_is_refused_and_the_grant_released(pool, clock):
    with pytest.raises(ValueError, match="margin"):
        lease_on(pool, clock, margin_seconds=30)
    assert pool.leases == {}


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        # A 30 s ttl less the default 3 s margin is safe for 27 s; a renewal unanswered is tried again 1 s later.
        ({"renew_fraction": 0.9}, "renews 27 s into a 30 s ttl and retries at 28 s, past its safe end at 27 s"),
        ({"renew_fraction": 0.88}, "retries at 27.4 s, past its safe end at 27 s"),
        ({"margin_seconds": 20}, "renews 10 s into a 30 s ttl and retries at 11 s, past its safe end at 10 s"),
    ],
)
def test_a_lease_one_unanswered_renewal_would_lose_is_refused_and_its_grant_released(pool, clock, options, refused):
    with pytest.raises(ValueError, match=re.escape(refused)):
        lease_on(pool, clock, **options)
    assert pool.leases == {}


def test_a_lease_whose_retry_fits_before_the_safe_end_is_kept(pool, clock):
    assert lease_on(pool, clock, renew_fraction=0.85).renew_due() == pytest.approx(25.5)  # its retry at 26.5 s
    assert lease_on(pool, clock, margin_seconds=18).renew_due() == pytest.approx(10)  # its retry at 11 s, safe to 12


def test_the_refusal_is_raised_when_the_release_of_its_grant_fails_too(pool, clock, monkeypatch):
    def unanswered(*_: Any) -> bool:
        raise TicketsError(None, "unreachable", "no answer")

    monkeypatch.setattr(pool, "release_worker", unanswered)
    with pytest.raises(ValueError, match="one unanswered renewal would lose it"):
        lease_on(pool, clock, renew_fraction=0.95)


def test_the_background_thread_renews_and_reports_a_loss(clock):
    """Real time: a 1 s ttl renewed every third of a second; then the pool refuses, and the thread reports it."""
    pool = MemoryPool(ManualClock(), ttl=1)
    pool.clock.monotonic = lambda: 0.0  # the pool never expires a lease by itself here
    lost = threading.Event()
    lease = WorkerLease(pool, "pool", margin_seconds=0.2, on_lost=lambda loss: lost.set())
    try:
        threading.Event().wait(1.2)
        assert 2 <= pool.names().count("renew") <= 5 and not lease.lost
        pool.leases.clear()
        assert lost.wait(2) and lease.lost
    finally:
        lease.close()


# --- the generator --------------------------------------------------------------------------------


def test_the_default_layout_is_41_bits_of_milliseconds_10_of_worker_12_of_sequence(pool, clock):
    lease = lease_on(pool, clock)
    lease_on(pool, clock)
    second = lease_on(pool, clock)  # worker 2
    ids = snowflake_on(second, clock)
    first, then = ids.next(), ids.next()
    assert first >> 22 == 3600 * 1000 and (first >> 12) & 1023 == 2 and first & 4095 == 0
    assert then == first + 1
    clock.advance(0.001)
    assert ids.next() == first + (1 << 22)
    assert lease.worker == 0


@pytest.mark.parametrize(
    "layout",
    [
        {"time_bits": 42},  # 42 + 10 + 12 > 63
        {"worker_bits": 1},  # a pool of 4 needs 2
        {"sequence_bits": -1},
        {"time_bits": 0},
        {"max_rollback_seconds": -1},
    ],
)
def test_layouts_that_do_not_fit_are_refused(pool, clock, layout):
    with pytest.raises(ValueError):
        snowflake_on(lease_on(pool, clock), clock, **layout)


def test_a_time_outside_the_layout_raises(pool, clock):
    ids = snowflake_on(lease_on(pool, clock), clock, epoch_ms=EPOCH_MS + 7200 * 1000)  # an epoch ahead of now
    with pytest.raises(ValueError, match="outside"):
        ids.next()


def test_a_millisecond_whose_sequence_is_used_up_waits_for_the_next(pool, clock):
    ids = snowflake_on(lease_on(pool, clock), clock, sequence_bits=2)
    issued = [ids.next() for _ in range(9)]
    assert issued == sorted(set(issued))
    assert [i & 3 for i in issued] == [0, 1, 2, 3, 0, 1, 2, 3, 0]
    assert issued[4] >> 12 == (issued[0] >> 12) + 1 and clock.slept  # it waited for the next millisecond


def test_a_clock_gone_back_within_the_bound_is_waited_for(pool, clock):
    ids = snowflake_on(lease_on(pool, clock), clock, max_rollback_seconds=1)
    before = ids.next()
    clock.wall_now -= 0.5
    after = ids.next()
    assert after > before and clock.slept == [pytest.approx(0.5)]


def test_a_clock_gone_back_beyond_the_bound_raises_and_never_repeats_an_id(pool, clock):
    ids = snowflake_on(lease_on(pool, clock), clock, max_rollback_seconds=1)
    issued = [ids.next()]
    clock.wall_now -= 5
    with pytest.raises(ClockRollback):
        ids.next()
    assert clock.slept == []
    clock.wall_now += 4.5  # back within the bound: waited for
    issued.append(ids.next())
    clock.wall_now += 0.5
    issued.append(ids.next())
    assert issued == sorted(set(issued))


def test_a_clock_gone_back_while_waiting_for_the_next_millisecond_never_spills_into_the_worker_bits(pool, clock):
    """The sequence used up, the wait for the next millisecond meets a clock gone back beyond the bound: it
    raises, and a call on that same millisecond again waits, rather than counting past the sequence's bits."""
    ids = snowflake_on(lease_on(pool, clock), clock, sequence_bits=2)
    issued = [ids.next() for _ in range(4)]  # sequence 0..3: this millisecond's all
    stuck_ms = clock.wall_now

    def sleep_while_the_clock_steps_back(seconds: float) -> None:
        clock.slept.append(seconds)
        clock.wall_now = stuck_ms - 5 if len(clock.slept) == 1 else clock.wall_now + seconds

    ids._sleep = sleep_while_the_clock_steps_back
    with pytest.raises(ClockRollback):
        ids.next()
    clock.wall_now = stuck_ms  # back on the used-up millisecond
    issued += [ids.next(), ids.next()]
    assert [i >> 2 & 1023 for i in issued] == [0] * 6  # worker 0 throughout: no sequence carried into its bits
    assert issued == sorted(set(issued)) and issued[4] >> 12 == (issued[0] >> 12) + 1


def test_threads_sharing_a_generator_never_get_one_id_twice(pool, clock):
    ids = Snowflake(lease_on(pool, clock), sequence_bits=4)  # the real wall clock, 16 ids a millisecond
    found: list[list[int]] = [[] for _ in range(8)]

    def take(index: int) -> None:
        found[index] += [ids.next() for _ in range(500)]

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for batch in found for i in batch]
    assert len(set(every)) == len(every) == 4000
    assert all(batch == sorted(batch) for batch in found)
