"""Configs and ledgers the ledger's tests share, in every tier (tests/unit/test_ledger.py, the git
merges of tests/functional/test_ledger_git.py, app.py in tests/synth/test_ledger_app.py). Plain data."""

from __future__ import annotations

from tickets_deploy.config import parse_config
from tickets_deploy.ledger import Ledger, LedgerFile, Version, record_services, version_id

BASE = {  # strict, so new counters may take any layout; the rollout rule's tests serve unconfigured keys
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 4,
    "strictKeys": True,
    "counters": {"orders": {"start": 5000, "shards": 2}, "invoices": {"start": 1, "stride": 10}},
}


def config(**changes):
    return parse_config({**BASE, **changes})


def one_service(ledger: Ledger, change: str = "make init") -> LedgerFile:
    """A file holding `ledger` alone, as its first version."""
    services = {ledger.table_name: ledger}
    return LedgerFile(services, (Version(version_id(None, services), None, change),))


# --- versions: one line of history, and hole 1 (two pull requests merged by git) ---------------

MAIN = {"regions": {"us-east-1": 0}, "strictKeys": True, "counters": {"orders": {"start": 5000}}}
PR_A = {**MAIN, "strictKeys": False}  # hole 1: one pull request serves unconfigured keys ...
PR_B = {**MAIN, "counters": {**MAIN["counters"], "foo": {"start": 1000}}}  # ... another adds a counter
MERGED = {**PR_A, "counters": PR_B["counters"]}


def on(tickets: dict, previous: LedgerFile | None = None, change: str | None = None) -> LedgerFile:
    return record_services(previous, {"tickets-counters": parse_config(tickets)}, None, change)
