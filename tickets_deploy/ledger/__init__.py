"""The deployment ledger, tickets.lock.json: every setting that decides which numbers a lane owns, as
ever synthesised, so that no rollout of accepted configs can hand out a number twice
(docs/explanation/ledger.md#the-rollout-rule).

A fresh table cannot know what another region, an earlier slot owner or a deleted stack issued, and
the CDK cannot ask AWS at synthesis; the ledger, committed beside cdk.json, remembers it instead.
Rollouts are not atomic: regions update one at a time, a failed stack rolls back, a region may stay on
any earlier version. So the ledger also remembers which keys any recorded version served with the
layout of an unconfigured key, and a newly configured counter among them must keep that layout.

`record` compares a parsed config with the previous ledger and returns the next one, or refuses with
a LedgerError that names each field, its old and new value, why it would repeat tickets and what to
do instead. Plain Python (no aws_cdk), so it is tested without synthesising anything.

This package's one public API is the names below: every module outside it imports them from here, never
from its modules (tests/unit/test_house.py holds it). Its modules, each on the ones before it:
  fences.py    what the ledger records of fences: KeyEpoch, a PendingFence of Changes
  model.py     what the ledger holds: Ledger (a service), LedgerFile (the services and their versions)
  deployed.py  the `deployed` settings (the schema's `recorded` fields) and config_from_ledger
  codec.py     tickets.lock.json's text, version ids, and the upgrade of older formats (tests/fixtures/ledgers)
  epochs.py    layout changes above a fence: which keys a config changes, what no fence makes safe, the
               settings above it (docs/explanation/epochs-and-fences.md)
  rules.py     the rollout rule (`record`: what could repeat a ticket is refused)
  history.py   the versions (record_services, check_lineage)
  file.py      the file: read, write, init, and the config a command checks or serves with it
"""

from __future__ import annotations

from .codec import from_text, to_text, upgrade_text, version_id
from .deployed import config_from_ledger
from .epochs import applied, fence_refusals, layout_changes, record_epochs
from .fences import Change, KeyEpoch, PendingFence
from .file import (
    SYNTHESIS_REFUSED,
    applied_beside,
    applied_from,
    check_config_file,
    init_ledger,
    init_ledger_file,
    ledger_path_beside,
    new_accounts,
    one_way_choices,
    read_ledger,
    read_ledger_file,
    refusal,
    refuse_existing_ledger,
    service_config,
    write_ledger_file,
)
from .history import check_lineage, record_services
from .model import (
    COMMENT,
    INIT_COMMAND,
    LEDGER_FILE,
    LEDGER_VERSION_OUTPUT,
    UNCONFIGURED,
    VERSION_DIGITS,
    CounterRecord,
    Ledger,
    LedgerError,
    LedgerFile,
    SlotRecord,
    Version,
)
from .rules import record

__all__ = [
    "COMMENT",
    "INIT_COMMAND",
    "LEDGER_FILE",
    "LEDGER_VERSION_OUTPUT",
    "SYNTHESIS_REFUSED",
    "UNCONFIGURED",
    "VERSION_DIGITS",
    "Change",
    "CounterRecord",
    "KeyEpoch",
    "Ledger",
    "LedgerError",
    "LedgerFile",
    "PendingFence",
    "SlotRecord",
    "Version",
    "applied",
    "applied_beside",
    "applied_from",
    "check_lineage",
    "check_config_file",
    "config_from_ledger",
    "fence_refusals",
    "from_text",
    "init_ledger",
    "init_ledger_file",
    "layout_changes",
    "ledger_path_beside",
    "new_accounts",
    "one_way_choices",
    "read_ledger",
    "read_ledger_file",
    "record",
    "record_epochs",
    "record_services",
    "refusal",
    "refuse_existing_ledger",
    "service_config",
    "to_text",
    "upgrade_text",
    "version_id",
    "write_ledger_file",
]
