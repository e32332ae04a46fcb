"""The per-key ceiling that follows from the counted writes.

DynamoDB serves about 1,000 writes per second on one item (its per-partition write
limit), and a key's lanes are separate items: tickets/s per key =
1,000 / (counted writes per ticket) x shards.
"""

from __future__ import annotations

from tickets_deploy.rules import MAX_SHARDS

ITEM_WRITES_PER_S = 1000
SHARDS_SHOWN = (1, MAX_SHARDS)


def per_key_ceiling(writes_per_ticket: dict[int, float], baseline_writes_per_ticket: float) -> dict:
    """Tickets/s per key: the baseline (one item, one ticket per write), and Tickets for each
    counted block size and for one shard and the most shards a key may have."""
    return {
        "baseline": ITEM_WRITES_PER_S / baseline_writes_per_ticket,
        "tickets": {
            shards: {count: ITEM_WRITES_PER_S / writes * shards for count, writes in sorted(writes_per_ticket.items())}
            for shards in SHARDS_SHOWN
        },
    }
