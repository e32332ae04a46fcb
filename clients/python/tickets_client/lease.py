"""Block leasing: one request buys a range block of tickets, handed out one by one in-process.

    lease = TicketLease(TicketsClient(url), "orders")
    order_id = lease.next()   # no network on almost every call

This is Meituan Leaf's "segment" mode (and Didi tinyid's client), double-buffered and sized
adaptively. Each block comes from `POST /_blocks/{key}?count=N`: one request and one DynamoDB
write whatever N is, answered as first, last and step.

Sizing. The first block holds `block_size` tickets. Whenever the lease asks for a block, it
looks at the rate at which tickets are being taken: if a block of the current size is used up
faster than `target_seconds`, the next block is twice as big; if it would last more than twice
`target_seconds`, half as big (never below `block_size`); in between, the same size. (The band
of 1x-2x keeps a steady rate from flipping between two sizes.) Blocks never exceed `max_block`
(at most 1,000,000, the protocol's limit). A deployment may allow less (`maxBlock`), and a deploy
may lower it under a running lease: when the server refuses a block with 400, the lease halves the
size until a block is accepted (below `block_size` too, down to 1) and never asks for more than that
size again. A 400 at every size down to 1 is not about the size: it is raised, and the lease's sizes
stay as they were. An opaque counter (cdk.json's `counters.KEY.opaque`) answers no block: its tickets are
only ever shown as ids, which only the server's key makes. Its 400 `opaque_counter` is raised at once, by
the first `next()`; take its ids with `TicketsClient.next_ids` instead.

Prefetch. The next block is fetched in the background once the tickets left in the current
block, at the observed rate, would last less than a few (PREFETCH_LATENCIES) of the slowest
recent fetch times: at a steady rate `next()` then never waits for the network.

The trade. Bigger blocks mean fewer requests and writes, and bigger gaps: tickets of a lease
that are never handed out are skipped, not reused (the server issued the whole block, and
nothing hands tickets back). Closing a lease, or a process stopping, leaves at most the rest of
the current block and the whole prefetched one unused: up to 2 x `max_block` tickets. `close()`
says how many. Where gaps matter, lower `max_block` or `target_seconds`.

Order. Tickets are unique, always. A block is ascending (first, first + step, ...), and every
thread's tickets from one block ascend. Across blocks the lease is ascending only when the key
has ONE lane in this region (`shards` = 1, however many regions): each block then comes from
that lane, after the previous one. On a sharded key each block comes from a lane the server
picks at random, so a later block may hold smaller tickets than an earlier one. Across leases
(processes, hosts) tickets interleave block by block: they are not globally ordered in time.
"""

from __future__ import annotations

import collections
import operator
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from .client import MAX_BLOCK, Block
from .errors import TicketsError

DEFAULT_BLOCK_SIZE = 1000
DEFAULT_TARGET_SECONDS = 1.0
# Prefetch when the current block would last less than this many of the slowest recent fetches.
PREFETCH_LATENCIES = 3
_LATENCIES_KEPT = 4
# A block is handed out in this many runs; between two runs the lease looks at the clock, measures
# the rate and decides whether to prefetch. Within a run, `next()` only steps an iterator.
RUNS_PER_BLOCK = 16
# A step of a range iterator is one C call, which the GIL makes atomic: two threads stepping one
# iterator never get the same ticket. So `next()` takes a ticket without the lock, and locks only to
# move on to the next run. A free-threaded build running without the GIL (PEP 703) always locks.
_ITERATOR_STEP_IS_ATOMIC = getattr(sys, "_is_gil_enabled", lambda: True)()


class BlockSource(Protocol):
    def block(self, key: str, count: int, *, idempotent: bool = True) -> Block: ...


class TicketLease:
    """Thread-safe: any number of threads may share one lease; no ticket is handed out twice."""

    def __init__(
        self,
        client: BlockSource,
        key: str,
        block_size: int = DEFAULT_BLOCK_SIZE,
        *,
        max_block: int = MAX_BLOCK,
        target_seconds: float = DEFAULT_TARGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not isinstance(key, str) or not key:
            raise ValueError(f"a lease needs a key (range blocks come from /_blocks/{{key}}), got {key!r}")
        if not 1 <= max_block <= MAX_BLOCK:
            raise ValueError(f"max_block must be 1..{MAX_BLOCK}, got {max_block}")
        if not 1 <= block_size <= max_block:
            raise ValueError(f"block_size must be 1..max_block ({max_block}), got {block_size}")
        if not target_seconds > 0:
            raise ValueError(f"target_seconds must be more than 0, got {target_seconds}")
        self.key = key
        self.block_size = block_size
        self.max_block = max_block
        self.target_seconds = target_seconds
        self._client = client
        self._clock = clock
        self._lock = threading.Lock()
        # Changed under the lock only: the run being handed out (the fast path steps it without the
        # lock), the current block, how much of it runs have released, and when it began.
        self._run: Iterator[int] = iter(())
        self._block = range(0)
        self._released = 0
        self._began = 0.0
        self._rate: float | None = None  # tickets per second, as last measured
        self._latencies: collections.deque[float] = collections.deque(maxlen=_LATENCIES_KEPT)
        self._sizes: collections.Counter[int] = collections.Counter()
        self._pending: Future[tuple[Block, float]] | None = None
        self._prefetcher: ThreadPoolExecutor | None = None
        self._closed = False
        # Written by the one fetch in flight only (fetches never overlap): the largest size the server
        # accepted after refusing a larger one.
        self._ceiling = max_block

    def next(self) -> int:
        """The next ticket. Waits for the network only when the current block is used up and the
        next one has not arrived; a failed prefetch raises here, as TicketsError, and the next call
        tries again."""
        if _ITERATOR_STEP_IS_ATOMIC:
            for ticket in self._run:  # the common case: no lock, no other work
                return ticket
        with self._lock:
            while True:
                for ticket in self._run:  # another thread may have moved on already
                    return ticket
                self._next_run()

    @property
    def current_block_size(self) -> int:
        """The size of the block being handed out (0 before the first and after close)."""
        return len(self._block)

    @property
    def block_sizes(self) -> dict[int, int]:
        """How many blocks of each size this lease has taken into use."""
        with self._lock:
            return dict(self._sizes)

    def close(self) -> int:
        """Stop prefetching, waiting for a fetch already in flight (at most the client's timeout per
        attempt). Returns how many tickets are left unused: the rest of the current block and the
        prefetched one, which are skipped (see the module's doc)."""
        with self._lock:
            self._closed = True
            unused = operator.length_hint(self._run) + len(self._block) - self._released
            self._run, self._block, self._released = iter(()), range(0), 0
            pending, self._pending = self._pending, None
            prefetcher, self._prefetcher = self._prefetcher, None
        if prefetcher is not None:
            prefetcher.shutdown(wait=True, cancel_futures=True)
        if pending is not None and not pending.cancelled() and pending.exception() is None:
            unused += pending.result()[0].count
        return unused

    def __enter__(self) -> TicketLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_run(self) -> None:
        """The current run is used up: release the block's next run, or switch to the next block
        (the prefetched one, else fetched now). Under the lock."""
        if self._closed:
            raise RuntimeError("this TicketLease is closed")
        self._measure_rate()
        if self._released == len(self._block):
            pending, self._pending = self._pending, None
            block, latency = pending.result() if pending is not None else self._fetch(self._next_size())
            self._latencies.append(latency)
            self._sizes[block.count] += 1
            self._block, self._released, self._began = block.tickets, 0, self._clock()
        self._prefetch_if_due()
        run = self._block[self._released : self._released + -(-len(self._block) // RUNS_PER_BLOCK)]
        self._released += len(run)
        self._run = iter(run)

    def _measure_rate(self) -> None:
        """Every ticket released so far from the current block has been handed out: the rate."""
        elapsed = self._clock() - self._began
        if self._released and elapsed > 0:
            self._rate = self._released / elapsed

    def _prefetch_if_due(self) -> None:
        if self._pending is not None or self._rate is None:
            return
        seconds_left = (len(self._block) - self._released) / self._rate
        if seconds_left < PREFETCH_LATENCIES * max(self._latencies, default=0.0):
            if self._prefetcher is None:
                self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tickets-lease")
            self._pending = self._prefetcher.submit(self._fetch, self._next_size())

    def _next_size(self) -> int:
        """Leaf's rule: double while a block lasts less than the target, halve when it lasts more
        than twice the target, within block_size..max_block, and never above what the server accepts."""
        size = len(self._block) or self.block_size
        if self._rate is not None:
            lasts = size / self._rate
            if lasts < self.target_seconds:
                size *= 2
            elif lasts > 2 * self.target_seconds:
                size //= 2
        return min(max(self.block_size, size), self._ceiling)

    def _fetch(self, size: int) -> tuple[Block, float]:
        """A block of `size` tickets and how long it took. No Idempotency-Key: a lease skips unused
        tickets anyway, so a block burned by a retry after a lost answer is one more gap, while the
        key would cost the server two more DynamoDB writes per block."""
        refused = False
        while True:
            began = self._clock()
            try:
                block = self._client.block(self.key, size, idempotent=False)
            except TicketsError as err:
                # The server's maxBlock (perhaps lowered since the last block) is a 400 whose limit is
                # stated only in prose: halve until a block is accepted. An opaque counter's 400 is no
                # matter of size: it never answers blocks.
                if err.status == 400 and err.code != "opaque_counter" and size > 1:
                    size, refused = size // 2, True
                    continue
                raise
            if refused:
                self._ceiling = size
            return block, self._clock() - began
