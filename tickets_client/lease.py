"""Block leasing: one request buys `block_size` tickets, handed out one by one in-process.

    lease = TicketLease(TicketsClient(url), "orders", block_size=1000)
    order_id = lease.next()   # no network on most calls

This is the Meituan Leaf / Didi tinyid "segment" client, double-buffered: when the part of
the current block left falls to `refill_at`, the next block is fetched in the background,
so callers rarely wait for the network.

Unused tickets of a lease are skipped, not reused: the server has already issued the whole
block, and nothing hands tickets back. Closing a lease, or a process exiting, leaves gaps
in the sequence (up to two blocks per lease: the current one and the one prefetched).
Tickets remain unique, and ascending within a lease; across leases (processes, hosts) they
interleave block by block, so they are not globally ordered in time. Keep `block_size`
small where gaps matter, large where requests cost.
"""

from __future__ import annotations

import math
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

from .client import TicketsClient
from .errors import TicketsError

MAX_BLOCK_SIZE = 1000  # the server's largest count
# A step of a list iterator is one C call, which the GIL makes atomic: two threads stepping one
# iterator never get the same ticket. So `next()` takes a ticket without the lock, and locks only to
# move on to the next run. A free-threaded build running without the GIL (PEP 703) always locks.
_ITERATOR_STEP_IS_ATOMIC = getattr(sys, "_is_gil_enabled", lambda: True)()


class TicketLease:
    """Thread-safe: any number of threads may share one lease; no ticket is handed out twice."""

    def __init__(self, client: TicketsClient, key: str | None = None, block_size: int = 1000,
                 refill_at: float = 0.5):
        if not 1 <= block_size <= MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be 1..{MAX_BLOCK_SIZE}, got {block_size}")
        if not 0 <= refill_at <= 1:
            raise ValueError(f"refill_at is a fraction of a block, 0..1 (0: no prefetch), got {refill_at}")
        self.key = key
        self.block_size = block_size
        self._client = client
        # The index whose handing out leaves refill_at of the block or less: it starts the prefetch.
        # (-1: never. The epsilon keeps 0.3 * 10 from counting as 3.0000000000000004.)
        left = math.floor(refill_at * block_size + 1e-9)
        self._prefetch_index = max(0, block_size - 1 - left) if refill_at else -1
        self._lock = threading.Lock()
        # A block is handed out as two runs: the tickets before the prefetch point, then the rest,
        # whose first ticket starts the prefetch. Only the move from one run to the next does more
        # than step an iterator. The runs change under the lock only.
        self._run: Iterator[int] = iter(())
        self._rest: list[int] | None = None  # the current block's second run, until it starts
        self._pending: Future[list[int]] | None = None
        self._prefetcher: ThreadPoolExecutor | None = None
        self._closed = False

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

    def close(self) -> None:
        """Stop prefetching, waiting for a fetch already in flight (at most the client's timeout
        per attempt). The tickets not yet handed out are skipped (see the module's doc)."""
        with self._lock:
            self._closed = True
            self._run, self._rest = iter(()), None
            self._pending = None
            prefetcher, self._prefetcher = self._prefetcher, None
        if prefetcher is not None:
            prefetcher.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "TicketLease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_run(self) -> None:
        """The current run is used up: go on with the block's second run, starting the prefetch,
        or switch to the next block (the prefetched one, else fetched now). Under the lock."""
        if self._rest is not None:
            self._run, self._rest = iter(self._rest), None
            self._start_prefetch()
            return
        if self._closed:
            raise RuntimeError("this TicketLease is closed")
        pending, self._pending = self._pending, None
        block = pending.result() if pending is not None else self._fetch()
        if self._prefetch_index < 0:
            self._run = iter(block)
        else:
            self._run, self._rest = iter(block[:self._prefetch_index]), block[self._prefetch_index:]

    def _start_prefetch(self) -> None:
        if self._pending is None and not self._closed:
            if self._prefetcher is None:
                self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tickets-lease")
            self._pending = self._prefetcher.submit(self._fetch)

    def _fetch(self) -> list[int]:
        # No Idempotency-Key: a lease skips unused tickets anyway, so a block burned by a retry after
        # a lost answer is one more gap, while the key would cost two more DynamoDB writes per block.
        block = self._client.next(self.key, self.block_size, idempotent=False)
        if len(block) != self.block_size or len(set(block)) != len(block):
            raise TicketsError(200, "bad_response",
                               f"asked for {self.block_size} distinct tickets, got {len(block)}")
        return block
