"""Rotating an opaque counter's key (docs/how-to/opaque-order-numbers.md#rotate-the-key): ids made with a new key
version never equal ids made with an old one, whatever the order of deploys. Above a fence (a key version raised in the
same change as a layout change, `python -m tickets_admin fence`), the old version's functions stop at once in every
region, so every ticket above the fence has a new-version id; without one, each region turns to the new version when its
deploy lands, and both versions' ids stay distinct meanwhile. Through the real handler on moto, two regions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functional.test_fence import checkout, deployed, fence, synthesise
from moto_deployment import OPAQUE_KEYS, Region
from tickets.opaque import OpaqueConfig
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LedgerError, init_ledger_file, read_ledger_file
from tickets_deploy.opaque_decode import OpaqueCodec

TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
OLD = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "strictKeys": True,
    "counters": {"orders": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS}},
}
ROTATED = json.loads(json.dumps(OLD))
ROTATED["counters"]["orders"]["opaque"]["keyVersion"] = 2
FENCED = json.loads(json.dumps(ROTATED))
FENCED["counters"]["orders"]["shards"] = 2  # a layout change in the same change: the fence stops the old lanes
IDS = OpaqueCodec(OpaqueConfig(10, "digits", "luhn"), OPAQUE_KEYS, "orders")


def take(region: Region, count: int) -> list[str]:
    answer = region.post("/orders", query={"count": count})
    assert answer.status == 200, answer
    return answer.body.get("ids", [answer.body["id"]])


def test_a_rotation_above_a_fence_keeps_every_id_distinct(aws, tmp_path: Path) -> None:
    config_file = checkout(tmp_path, OLD)
    init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(OLD)})
    old = [deployed(OLD, region, tmp_path) for region in ("us-east-1", "eu-west-1")]
    before = [made for region in old for made in take(region, 40) + take(region, 1)]

    checkout(tmp_path, FENCED)
    with pytest.raises(LedgerError, match="python -m tickets_admin fence"):
        synthesise(config_file, FENCED)
    status, out, err = fence(config_file)
    assert status == 0, err
    fenced_at = int(out.split("orders: fence ")[1].split(";")[0])
    for region in old:  # the old key version's functions, still running: stopped at once, never a v1 id more
        stopped = region.post("/orders")
        assert stopped.status == 503 and "id" not in stopped.body
    synthesise(config_file, FENCED)  # accepted: the key version raised with the layout, above the fence
    assert "orders key version 1 -> 2" in read_ledger_file(tmp_path / "tickets.lock.json").versions[-1].change
    new = [deployed(FENCED, region, tmp_path) for region in ("us-east-1", "eu-west-1")]
    after = [made for region in new for made in take(region, 40) + take(region, 1)]

    assert len(set(before + after)) == len(before) + len(after) == 164
    decoded_before, decoded_after = [IDS.decode(each) for each in before], [IDS.decode(each) for each in after]
    assert {version for _, version in decoded_before} == {1} and {version for _, version in decoded_after} == {2}
    assert max(ticket for ticket, _ in decoded_before) < fenced_at <= min(ticket for ticket, _ in decoded_after)
    assert len({ticket for ticket, _ in decoded_before + decoded_after}) == 164  # the tickets, each once
    assert new[0].get("/_counters/orders").body["opaque"]["keyVersion"] == 2


def test_a_rotation_without_a_fence_rolls_out_region_by_region_and_no_id_repeats(aws, tmp_path: Path) -> None:
    """A key version raised alone needs no fence (the ledger takes it): while one region still encodes with
    version 1 and the other with 2, their ids never meet, and the version is read off each id."""
    config_file = checkout(tmp_path, OLD)
    init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(OLD)})
    east_old, west_old = (deployed(OLD, region, tmp_path) for region in ("us-east-1", "eu-west-1"))
    made = take(east_old, 30) + take(west_old, 30)
    checkout(tmp_path, ROTATED)
    synthesise(config_file, ROTATED)  # accepted without a fence
    east_new = deployed(ROTATED, "us-east-1", tmp_path)  # east deployed first; west still on version 1
    rollout = take(east_new, 30) + take(west_old, 30) + take(east_new, 1) + take(west_old, 1)
    west_new = deployed(ROTATED, "eu-west-1", tmp_path)
    made += rollout + take(west_new, 30)
    assert len(set(made)) == len(made) == 152
    versions = [IDS.decode(each)[1] for each in made]
    assert versions == [1] * 60 + [2] * 30 + [1] * 30 + [2, 1] + [2] * 30
    assert len({IDS.decode(each)[0] for each in made}) == 152
