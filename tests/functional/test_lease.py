"""TicketLease: range blocks sized adaptively (Leaf's segment mode), prefetched by time left, and the
order it promises. Sizing and prefetch run on a manual clock (no timing in tests); the lease against
the local server runs over real HTTP."""

from __future__ import annotations

import itertools
import threading

import pytest

from local_support import write_cdk_json
from tickets_client.client import Block, TicketsClient
from tickets_client.errors import TicketsError
from tickets_client.lease import PREFETCH_LATENCIES, TicketLease


class ManualClock:
    """Time moves only when told to: by the test, or by a block source standing for a slow network."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class InMemoryBlocks:
    """Consecutive blocks from memory. `latency`: seconds each fetch takes on `clock`; `limit`: the
    server's maxBlock (larger blocks are 400); `fail_calls`: calls answered 503."""

    def __init__(
        self,
        clock: ManualClock | None = None,
        latency: float = 0.0,
        limit: int = 1_000_000,
        fail_calls: tuple[int, ...] = (),
    ):
        self.clock, self.latency, self.limit, self.fail_calls = clock, latency, limit, fail_calls
        self.asked: list[int] = []
        self.next_ticket = 1

    def block(self, key: str, count: int, *, idempotent: bool = True) -> Block:
        assert not idempotent, "a lease accepts gaps and sends no Idempotency-Key"
        self.asked.append(count)
        if self.clock is not None:
            self.clock.advance(self.latency)
        if len(self.asked) in self.fail_calls:
            raise TicketsError(503, "unavailable", "try later")
        if count > self.limit:
            raise TicketsError(400, "bad_request", f"a block holds at most {self.limit} tickets")
        block = Block(self.next_ticket, self.next_ticket + count - 1, 1, count)
        self.next_ticket += count
        return block


def take(lease: TicketLease, count: int, clock: ManualClock | None = None, seconds_each: float = 0.0) -> list[int]:
    tickets = []
    for _ in range(count):
        tickets.append(lease.next())
        if clock is not None:
            clock.advance(seconds_each)
    return tickets


def wait_for(condition, what: str) -> None:
    event = threading.Event()
    for _ in range(3000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError(f"timed out waiting for {what}")


# --- sizing ---------------------------------------------------------------------------------------


def test_blocks_double_while_used_up_faster_than_the_target_and_halve_when_they_outlast_twice_it():
    # Fetches take no time on this clock, so nothing is prefetched: each block is sized when the one
    # before it is used up, from the rate it was used up at.
    clock = ManualClock()
    source = InMemoryBlocks()
    lease = TicketLease(source, "k", block_size=100, max_block=1600, target_seconds=1.0, clock=clock)
    fast, slow = 1e-4, 0.012  # seconds per ticket: 10,000/s, then about 83/s
    handed = []
    for size in (100, 200, 400, 800, 1600):  # a 100-block lasts 0.01 s: double, up to max_block
        handed += take(lease, size, clock, fast)
    for size in (1600, 800, 400, 200, 100, 100):  # 1600 last 19.2 s: halve, but never below 100
        handed += take(lease, size, clock, slow)
    assert source.asked == [100, 200, 400, 800, 1600, 1600, 800, 400, 200, 100, 100]
    assert handed == list(range(1, len(handed) + 1))
    assert lease.block_sizes == {100: 3, 200: 2, 400: 2, 800: 2, 1600: 2}
    assert lease.close() == 0


def test_a_steady_rate_within_the_band_keeps_the_size():
    clock = ManualClock()
    source = InMemoryBlocks()
    lease = TicketLease(source, "k", block_size=500, target_seconds=1.0, clock=clock)
    for _ in range(4):
        take(lease, 500, clock, 0.003)  # a 500-block lasts 1.5 s: between the target and twice it
    assert source.asked == [500, 500, 500, 500]


def test_the_servers_max_block_stops_the_growth_at_the_largest_block_it_gave():
    clock = ManualClock()
    source = InMemoryBlocks(limit=300)
    lease = TicketLease(source, "k", block_size=100, clock=clock)
    handed = take(lease, 100 + 200 + 200 + 200, clock, 1e-5)
    assert source.asked == [100, 200, 400, 200, 200]  # 400 refused once, then never asked again
    assert handed == list(range(1, 701))


def test_after_a_deploy_lowers_max_block_the_lease_shrinks_to_what_the_server_accepts_and_goes_on():
    clock = ManualClock()
    source = InMemoryBlocks()
    lease = TicketLease(source, "k", block_size=1000, clock=clock)
    handed = take(lease, sum(1000 * 2**n for n in range(8)), clock, 1e-7)  # grows 1,000 .. 128,000
    assert source.asked[-1] == 128_000
    source.limit = 20_000  # the deploy: maxBlock 20,000
    del source.asked[:]
    handed += take(lease, 3 * 16_000, clock, 1e-7)
    assert source.asked == [256_000, 128_000, 64_000, 32_000, 16_000, 16_000, 16_000]  # halved until accepted
    assert handed == list(range(1, len(handed) + 1))


def test_a_max_block_below_block_size_shrinks_the_first_block():
    source = InMemoryBlocks(limit=50)
    lease = TicketLease(source, "k", block_size=100, clock=ManualClock())
    assert take(lease, 60) == list(range(1, 61))
    assert source.asked == [100, 50, 50]


def test_a_block_refused_at_every_size_raises_the_servers_error():
    """A 400 that is not about the size (here every block is refused) ends, after halving down to 1,
    in that 400: the lease does not get stuck at a smaller size for it."""
    source = InMemoryBlocks(limit=0)
    lease = TicketLease(source, "k", block_size=100, clock=ManualClock())
    with pytest.raises(TicketsError) as error:
        lease.next()
    assert error.value.status == 400
    assert source.asked == [100, 50, 25, 12, 6, 3, 1]
    source.limit = 1_000_000
    assert lease.next() == 1
    assert source.asked[-1] == 100


@pytest.mark.parametrize(
    "arguments",
    [
        {"block_size": 0},
        {"block_size": 1001, "max_block": 1000},
        {"max_block": 1_000_001},
        {"max_block": 0},
        {"target_seconds": 0},
        {"key": None},
        {"key": ""},
    ],
)
def test_lease_rejects_impossible_settings(arguments):
    with pytest.raises(ValueError):
        TicketLease(InMemoryBlocks(), **{"key": "k", **arguments})


@pytest.mark.parametrize("lock_free", [True, False], ids=["gil-lock-free", "free-threaded-locking"])
def test_threads_sharing_a_lease_never_get_one_ticket_twice(monkeypatch, lock_free):
    import tickets_client.lease as lease_module

    monkeypatch.setattr(lease_module, "_ITERATOR_STEP_IS_ATOMIC", lock_free)
    lease = TicketLease(InMemoryBlocks(), "k", block_size=64, clock=ManualClock())  # no prefetch: fetched in line
    handed: list[list[int]] = [[] for _ in range(8)]

    def work(index: int) -> None:
        for _ in range(5000):
            handed[index].append(lease.next())

    workers = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    tickets = [ticket for batch in handed for ticket in batch]
    assert sorted(tickets) == list(range(1, 40_001))  # every ticket once, none skipped while open
    assert all(batch == sorted(batch) for batch in handed)


# --- prefetch -------------------------------------------------------------------------------------


def test_prefetch_starts_when_the_rest_of_the_block_would_last_less_than_a_few_fetches():
    clock = ManualClock()
    latency = 0.0125  # every fetch takes 12.5 ms
    source = InMemoryBlocks(clock, latency)
    lease = TicketLease(source, "k", block_size=160, target_seconds=1.0, clock=clock)
    # 1,000 tickets/s: the prefetch is due once fewer than 1000 * 3 * 0.0125 = 37.5 tickets are left.
    # The lease looks at the clock every 10 tickets (a sixteenth of the block).
    assert PREFETCH_LATENCIES == 3
    assert take(lease, 120, clock, 0.001) == list(range(1, 121))
    assert source.asked == [160]  # 40 left: 40 ms, more than 37.5 ms
    take(lease, 10, clock, 0.001)
    assert source.asked == [160]  # the run that leaves 30 was released when 40 were left
    lease.next()  # 30 left, 30 ms: fetch now, in the background
    wait_for(lambda: len(source.asked) == 2, "the prefetch")
    assert source.asked == [160, 320]  # 160 tickets last 0.16 s, under the 1 s target: double
    assert take(lease, 29, clock, 0.001)[-1] == 160
    assert lease.next() == 161  # the prefetched block, with no fetch in the way
    assert source.asked == [160, 320]
    assert lease.close() == 320 - 1


def test_a_failed_prefetch_surfaces_when_its_block_is_needed_then_recovers():
    clock = ManualClock()
    source = InMemoryBlocks(clock, latency=1.0, fail_calls=(2,))
    lease = TicketLease(source, "k", block_size=4, clock=clock)
    assert take(lease, 4, clock, 0.1) == [1, 2, 3, 4]  # the prefetch ran (and failed) meanwhile
    wait_for(lambda: len(source.asked) == 2, "the prefetch")
    with pytest.raises(TicketsError, match="unavailable"):
        lease.next()
    assert lease.next() == 5  # fetched afresh
    lease.close()


def test_close_counts_what_it_skips_and_a_closed_lease_refuses():
    lease = TicketLease(InMemoryBlocks(), "k", block_size=100, clock=ManualClock())  # no rate: no prefetch
    assert take(lease, 30) == list(range(1, 31))
    assert lease.close() == 70
    with pytest.raises(RuntimeError, match="closed"):
        lease.next()


# --- against the local server: threads, and what order a lease promises ---------------------------

SHARDED = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {"sharded": {"shards": 2}, "single": {"start": 1}},
}


class RecordingClient(TicketsClient):
    """Remembers every block the lease asked for."""

    def __init__(self, url: str):
        super().__init__(url)
        self.blocks: list[Block] = []
        self._blocks_lock = threading.Lock()

    def block(self, key, count, *, idempotent=True):
        assert not idempotent, "a lease accepts gaps and sends no Idempotency-Key"
        block = super().block(key, count, idempotent=idempotent)
        with self._blocks_lock:
            self.blocks.append(block)
        return block


@pytest.fixture(scope="module")
def server(tickets_servers):
    running = tickets_servers(SHARDED)
    running.reset()
    return running


@pytest.fixture
def in_process_server(tmp_path):
    """For the one test that reaches into the app (to fix the server's lane pick): the server in this process."""
    from tickets_local.server import LocalServer

    with LocalServer(config_path=write_cdk_json(tmp_path, SHARDED)) as running:
        yield running


@pytest.mark.slow
def test_a_lease_shared_by_eight_threads_hands_out_distinct_tickets(server):
    client = RecordingClient(server.url)
    lease = TicketLease(client, "leased", block_size=100)
    threads, per_thread = 8, 500
    handed: list[list[int]] = [[] for _ in range(threads)]

    def work(index: int) -> None:
        for _ in range(per_thread):
            handed[index].append(lease.next())

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    unused = lease.close()

    tickets = [t for batch in handed for t in batch]
    assert len(tickets) == threads * per_thread
    assert len(set(tickets)) == len(tickets), "a ticket was handed out twice"
    assert all(batch == sorted(batch) for batch in handed)  # one lane: each thread's tickets increase
    issued = [t for block in client.blocks for t in block.tickets]
    assert issued == list(range(1, 2 * len(issued), 2))  # one lane in us-east-1 (slot 0 of 2): 1, 3, 5, ...
    assert set(tickets) <= set(issued) and unused == len(issued) - len(tickets)
    assert all(block.count >= 100 for block in client.blocks)
    assert TicketsClient(server.url).state("leased")["last"] == issued[-1]


@pytest.mark.slow
def test_with_one_lane_per_region_a_lease_ascends_across_blocks(server):
    """`single` has one lane in us-east-1 (slot 0 of 2 regions): every block comes from it, each
    after the one before, even with another client taking tickets of the key in between."""
    client = RecordingClient(server.url)
    other = TicketsClient(server.url)
    with TicketLease(client, "single", block_size=10) as lease:
        handed = []
        for _ in range(6):
            handed += take(lease, 50)
            other.next("single", 3)
    assert len(client.blocks) >= 3
    assert all(b > a for a, b in zip(handed, handed[1:]))
    assert all(block.first > before.last for before, block in zip(client.blocks, client.blocks[1:]))


@pytest.mark.slow
def test_on_a_sharded_key_a_lease_ascends_within_each_block_but_not_across_blocks(in_process_server, monkeypatch):
    """Which shard serves a block is the server's random pick; here the pick is fixed (lane 1, then
    lane 0, then lane 1, ...), so what the lease promises can be shown without depending on a draw."""
    issuer = in_process_server.app.issuer
    turn = itertools.count()
    monkeypatch.setattr(issuer, "shuffle", lambda lanes: lanes.reverse() if next(turn) % 2 == 0 else None)
    client = RecordingClient(in_process_server.url)
    with TicketLease(client, "sharded", block_size=10) as lease:
        handed = take(lease, 10 + 20 + 40)
    first, second, third = client.blocks[:3]
    # us-east-1 is slot 0 of 2, so it owns lanes 0 and 1 of 4: lane 0 is 1, 5, 9, ...; lane 1 is 2, 6, ...
    assert first.tickets == range(2, 2 + 4 * 10, 4)  # lane 1
    assert second.tickets == range(1, 1 + 4 * 20, 4)  # lane 0: smaller than the block before it
    assert third.tickets == range(42, 42 + 4 * 40, 4)  # lane 1 again, after its first block
    assert handed == [*first.tickets, *second.tickets, *third.tickets]
    descents = [i for i, (a, b) in enumerate(zip(handed, handed[1:]), 1) if b < a]
    assert descents == [10, 30]  # within a block the tickets ascend; only block boundaries went down
