"""The deployment ledger, tickets.lock.json: every setting that decides which numbers a lane owns, as ever
synthesised, and its line of versions, so that no rollout of accepted configs hands out a number twice
(docs/explanation/ledger.md). `record` returns the next ledger for a config, or a LedgerError naming each field,
both values, why and what to do instead. The names below are the package's one public API (tests/unit/test_house.py
holds it); CONTRIBUTING.md lists its modules."""

from __future__ import annotations

from .codec import from_text, to_text, upgrade_text, version_id
from .deployed import config_from_ledger
from .epochs import applied, fence_refusals, layout_changes, record_epochs
from .file import (
    SYNTHESIS_REFUSED,
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
    Change,
    CounterRecord,
    KeyEpoch,
    Ledger,
    LedgerError,
    LedgerFile,
    PendingFence,
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
