"""A key's lanes in one region, across its epochs (docs/explanation/epochs-and-fences.md): the deployed function
issues from the current epoch's, which `raise` and `migrate` raise; the earlier epochs' were stopped at their fences
and are never raised or restarted, but still hold what they issued, which `migrate --verify` counts."""

from __future__ import annotations

from dataclasses import dataclass

from tickets.epochs import items_of
from tickets.sequence import Lane, lanes_of
from tickets.settings import CounterConfig
from tickets_deploy.ledger import Ledger


@dataclass(frozen=True)
class KeyLanes:
    key: str
    current: list[Lane]  # the lanes the deployed function issues from: `raise` writes these
    earlier: list[Lane]  # this region's lanes of every earlier epoch (none where it had no slot then)
    # Every item of every earlier epoch in this region's table, a sharded layout's record included: `fence`
    # stopped each (absent ones it wrote stopped), and each must stay stopped.
    stopped: list[str]

    @property
    def every_epoch(self) -> list[Lane]:
        """Every lane that ever issued the key's tickets in this region, the stopped ones included."""
        return self.earlier + self.current


def key_lanes(key: str, counter: CounterConfig, region_slot: int, region_slots: int, ledger: Ledger | None) -> KeyLanes:
    """`key`'s lanes in the region of `region_slot`, its `counter` config as the region's function runs it (in
    its current epoch: tickets_deploy.ledger.applied), the earlier epochs from the ledger that records them."""
    earlier: list[Lane] = []
    stopped: list[str] = []
    for epoch in ledger.epochs if ledger is not None else ():
        if epoch.key != key or epoch.number > counter.epoch:
            continue
        old, number = epoch.old, epoch.number - 1
        stopped += items_of(key, number, old.shards)
        if region_slot < old.region_slots:
            config = CounterConfig(start=old.start, stride=old.stride, shards=old.shards, epoch=number)
            earlier += lanes_of(key, config, region_slot, old.region_slots)
    return KeyLanes(key, lanes_of(key, counter, region_slot, region_slots), earlier, stopped)
