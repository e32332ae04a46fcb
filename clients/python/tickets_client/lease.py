"""Block leasing, the next block prefetched (Meituan Leaf's "segment" mode): docs/reference/clients.md."""

from __future__ import annotations

import collections
import contextlib
import operator
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from .client import MAX_BLOCK, Block, TicketsClient
from .errors import TicketsError

DEFAULT_BLOCK_SIZE = 1000
DEFAULT_TARGET_SECONDS = 1.0
PREFETCH_LATENCIES = 3  # prefetch when the block would last less than this many of the slowest recent fetches
_LATENCIES_KEPT = 4
RUNS_PER_BLOCK = 16  # between two runs of a block the lease measures the rate and decides whether to prefetch
# A step of a range iterator is one C call, which the GIL makes atomic: `next()` takes a ticket without the lock, and
# locks only to move on to the next run. A free-threaded build (PEP 703) always locks.
_ITERATOR_STEP_IS_ATOMIC = getattr(sys, "_is_gil_enabled", lambda: True)()


class TicketLease(contextlib.AbstractContextManager["TicketLease"]):
    """Thread-safe: any number of threads may share one lease; no ticket is handed out twice."""

    def __init__(
        self,
        client: TicketsClient,
        key: str,
        block_size: int = DEFAULT_BLOCK_SIZE,
        *,
        max_block: int = MAX_BLOCK,
        target_seconds: float = DEFAULT_TARGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not key:
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
        self._run: Iterator[int] = iter(())
        self._block = range(0)
        self._released = 0
        self._began = 0.0
        self._rate: float | None = None  # tickets per second, as last measured
        self._latencies: collections.deque[float] = collections.deque(maxlen=_LATENCIES_KEPT)
        self._sizes: collections.Counter[int] = collections.Counter()
        self._pending: Future[tuple[Block, float]] | None = None
        self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tickets-lease")  # a thread once used
        self._closed = False
        self._ceiling = max_block  # the largest size accepted after a refusal (fetches never overlap)

    def next(self) -> int:
        """The next ticket; a failed prefetch raises here, as TicketsError, and the next call tries again."""
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
        """Stop prefetching, waiting for a fetch in flight; how many tickets are left unused (skipped)."""
        with self._lock:
            self._closed = True
            unused = operator.length_hint(self._run) + len(self._block) - self._released
            self._run, self._block, self._released = iter(()), range(0), 0
            pending, self._pending = self._pending, None
        self._prefetcher.shutdown(wait=True, cancel_futures=True)
        if pending is not None and not pending.cancelled() and pending.exception() is None:
            unused += pending.result()[0].count
        return unused

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_run(self) -> None:
        """The run is used up: release the block's next (the next block prefetched if due), or switch blocks. Locked."""
        if self._closed:
            raise RuntimeError("this TicketLease is closed")
        elapsed = self._clock() - self._began
        if self._released and elapsed > 0:  # every ticket released so far has been handed out
            self._rate = self._released / elapsed
        if self._released == len(self._block):
            pending, self._pending = self._pending, None
            block, latency = pending.result() if pending is not None else self._fetch(self._next_size())
            self._latencies.append(latency)
            self._sizes[block.count] += 1
            self._block, self._released, self._began = block.tickets, 0, self._clock()
        seconds_left = float("inf") if self._rate is None else (len(self._block) - self._released) / self._rate
        if self._pending is None and seconds_left < PREFETCH_LATENCIES * max(self._latencies, default=0.0):
            self._pending = self._prefetcher.submit(self._fetch, self._next_size())
        run = self._block[self._released : self._released + -(-len(self._block) // RUNS_PER_BLOCK)]
        self._released += len(run)
        self._run = iter(run)

    def _next_size(self) -> int:
        """Double while a block lasts less than the target, halve past twice it (a steady rate keeps one size)."""
        size = len(self._block) or self.block_size
        if self._rate is not None:
            lasts = size / self._rate
            if lasts < self.target_seconds:
                size *= 2
            elif lasts > 2 * self.target_seconds:
                size //= 2
        return min(max(self.block_size, size), self._ceiling)

    def _fetch(self, size: int) -> tuple[Block, float]:
        """A block and how long it took; no Idempotency-Key (a block a retry burns is a gap; a key, two more writes)."""
        refused = False
        while True:
            began = self._clock()
            try:
                block = self._client.block(self.key, size, idempotent=False)
            except TicketsError as err:
                # maxBlock's 400 states its limit only in prose: halve until a block is accepted.
                if err.status == 400 and err.code != "opaque_counter" and size > 1:
                    size, refused = size // 2, True
                    continue
                raise
            if refused:
                self._ceiling = size
            return block, self._clock() - began
