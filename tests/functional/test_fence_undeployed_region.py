"""`tickets_admin fence` when a region the ledger gives a slot was synthesised but never deployed: its table does
not exist, and fence, which must read every such region's old lanes, names that cause and the way out (deploy it
first) instead of only "check --table and --region" (the fence's finding 6). Through the real handler on moto."""

from __future__ import annotations

from pathlib import Path

from test_fence import checkout, deployed, fence, synthesise, take

from tickets_deploy.config import parse_config
from tickets_deploy.ledger import init_ledger_file

EAST = {"regions": {"us-east-1": 0}, "regionSlots": 2, "strictKeys": True, "counters": {"orders": {"start": 5000}}}
BOTH = {**EAST, "regions": {"us-east-1": 0, "eu-west-1": 1}}
SHARDED = {**BOTH, "counters": {"orders": {"start": 5000, "shards": 2}}}


def test_a_region_recorded_but_never_deployed_is_named_with_deploy_it_first(aws, tmp_path: Path) -> None:
    config_file = checkout(tmp_path, EAST)
    init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(EAST)})
    east = deployed(EAST, "us-east-1", tmp_path)
    take(east, "/orders", count=2)
    checkout(tmp_path, BOTH)
    synthesise(config_file, BOTH)  # eu-west-1 on its free slot: recorded, not yet deployed (no table there)
    ledger, items = (tmp_path / "tickets.lock.json").read_text(), east.items()

    checkout(tmp_path, SHARDED)
    status, _, err = fence(config_file)
    assert status == 1
    assert "eu-west-1" in err and "never deployed" in err
    assert "deploy it first" in err and "then run fence again" in err
    assert east.items() == items and (tmp_path / "tickets.lock.json").read_text() == ledger  # nothing stopped
