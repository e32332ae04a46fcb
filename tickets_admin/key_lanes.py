"""A key's lanes in one region, across its epochs (docs/explanation/epochs-and-fences.md): `raise` and `migrate`
raise the current epoch's; the earlier epochs' were stopped at their fences, but `migrate --verify` counts what they
issued."""

from __future__ import annotations

from dataclasses import dataclass

from tickets.epochs import items_of
from tickets.sequence import Lane, lanes_of
from tickets.settings import CounterConfig
from tickets_deploy.ledger import Ledger


@dataclass(frozen=True)
class KeyLanes:
    current: list[Lane]  # the lanes the deployed function issues from
    every_epoch: list[Lane]  # the earlier epochs' lanes here (none where the region had no slot then), then current
    stopped: list[str]  # every item of the earlier epochs here, a sharded layout's record included: each stays stopped


def key_lanes(key: str, counter: CounterConfig, region_slot: int, region_slots: int, ledger: Ledger | None) -> KeyLanes:
    """`counter` as the region's function runs it (tickets_deploy.ledger.applied), its earlier epochs from `ledger`."""
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
    current = lanes_of(key, counter, region_slot, region_slots)
    return KeyLanes(current, earlier + current, stopped)
