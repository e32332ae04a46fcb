"""What the deployment ledger holds: per service (counter table), its region slots, counter layouts, series,
what was ever served unconfigured and its fences (Ledger: each key's layout changes, KeyEpoch, and a fence begun
and not yet recorded, a PendingFence of Changes; docs/explanation/epochs-and-fences.md); the file's services and
its line of versions (LedgerFile). Plain data: the rollout rule is in rules.py, what a config changes above a
fence in epochs.py, the history in history.py, the file's format in codec.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tickets.epochs import Layout, epoch_start
from tickets.opaque import OpaqueConfig
from tickets.settings import CounterConfig
from tickets_deploy.counter_fields import COUNTER_FIELDS
from tickets_deploy.opaque_rules import describe

LEDGER_FILE = "tickets.lock.json"
COMMENT = (
    "Tickets deployment ledger, kept by cdk synth: per counter table, the region slots, counter settings and "
    "accounts ever deployed, and which keys were ever served unconfigured; and its versions, one line, each "
    "naming its parent, which deployed stacks record so that no rollout can repeat a ticket. Commit it with "
    "cdk.json; never edit, merge or delete it (docs/explanation/ledger.md)."
)
# The one init (`make init` runs it): what every message names, and the first version's change.
INIT_COMMAND = "python -m tickets_cdk init"
# The stack output naming the ledger version a stack was synthesised with (tickets_deploy/predeploy.py).
LEDGER_VERSION_OUTPUT = "TicketsLedgerVersion"


class LedgerError(ValueError):
    """A config the ledger refuses, or a ledger file that cannot be read; the message says what to do."""


@dataclass(frozen=True)
class SlotRecord:
    region: str
    retired: bool = False  # the region was removed: its retained table holds this slot's tickets
    accounts: tuple[str, ...] = ()  # every AWS account this region was synthesised for, sorted

    def to_json(self) -> dict[str, Any]:
        return {**({"accounts": list(self.accounts)} if self.accounts else {}), "region": self.region,
                **({"retired": True} if self.retired else {})}  # fmt: skip


# A counter's permanent fields (its layout), which every ledger writes for each counter ever deployed; those
# whose default is None (opaque) only when set, so that a ledger from before them reads and writes as it did.
LAYOUT_FIELDS = tuple(each for each in COUNTER_FIELDS if each.permanent)


@dataclass(frozen=True)
class CounterRecord:
    """A counter's layout: its permanent COUNTER_FIELDS (tests/unit/test_schema.py holds the two together)."""

    start: int
    stride: int
    shards: int
    opaque: OpaqueConfig | None = None  # its ids' settings: keyVersion may grow, the others never change

    @classmethod
    def of(cls, counter: CounterConfig) -> CounterRecord:
        return cls(**{each.attribute: getattr(counter, each.attribute) for each in LAYOUT_FIELDS})

    def _set(self) -> dict[str, Any]:
        """By cdk.json's names, a field whose default is None left out while it is None."""
        values = {each.name: getattr(self, each.attribute) for each in LAYOUT_FIELDS}
        return {name: value for name, value in values.items() if value is not None}

    def to_json(self) -> dict[str, Any]:
        """Numbers as parsed (the codec writes big ones as strings), opaque as cdk.json writes it."""
        return {name: v.to_json() if isinstance(v, OpaqueConfig) else v for name, v in self._set().items()}

    def describe(self) -> str:
        set_fields = self._set().items()
        return ", ".join(f"{name} {describe(v) if isinstance(v, OpaqueConfig) else v}" for name, v in set_fields)

    @property
    def numbering(self) -> CounterRecord:
        """The layout of its tickets alone (without opaque: how they are shown)."""
        return replace(self, opaque=None)


# The layout the handler gives a key that cdk.json does not configure (docs/explanation/ledger.md#the-rollout-rule).
UNCONFIGURED = CounterRecord.of(CounterConfig())


@dataclass(frozen=True)
class KeyEpoch:
    """One layout change of one key, as the ledger records it."""

    key: str
    number: int  # 1, 2, ...: the key's items in this epoch are `key@number`
    fence: int  # above every ticket the old layout's lanes issued, in every region
    old: Layout  # the layout stopped at the fence, with the start its lanes had
    configured: Layout  # the new layout as cdk.json writes it (its start as configured)

    @property
    def start(self) -> int:
        """The new layout's effective start: its first ticket (lane 0's)."""
        return epoch_start(self.fence, self.configured.start, self.configured.stride)

    @property
    def new(self) -> Layout:
        return replace(self.configured, start=self.start)

    def to_json(self) -> dict[str, Any]:
        return {**_change_json(self.number, self.old, self.configured), "fence": self.fence}


@dataclass(frozen=True)
class Change:
    """A key whose layout the config changes: its lanes of `old` (items of epoch `number - 1`) stop at a fence."""

    key: str
    number: int
    old: Layout
    configured: Layout

    def epoch(self, fence: int) -> KeyEpoch:
        return KeyEpoch(self.key, self.number, fence, self.old, self.configured)

    def describe(self) -> str:
        return f"{self.key} to epoch {self.number} ({self.configured.describe()})"


@dataclass(frozen=True)
class PendingFence:
    """A fence `tickets_admin fence` began and has not recorded: written to the ledger before any lane is stopped,
    so every lane it stops (each records `id`) is known to this ledger, and so synthesis refuses every config until
    the fence is finished (recorded as epochs) or undone (docs/how-to/change-a-layout.md)."""

    id: str  # random hex: each lane it stops records it (tickets.lane_item.FENCED_BY)
    changes: tuple[Change, ...]

    def describe(self) -> str:
        return "; ".join(change.describe() for change in self.changes)

    def to_json(self) -> dict[str, Any]:
        keys = {change.key: _change_json(change.number, change.old, change.configured) for change in self.changes}
        return {"id": self.id, "keys": dict(sorted(keys.items()))}


def _change_json(number: int, old: Layout, configured: Layout) -> dict[str, Any]:
    """A layout change as the file writes it, under its key: its epoch and both layouts."""
    return {"epoch": number, "from": _layout_json(old), "to": _layout_json(configured)}


def _layout_json(layout: Layout) -> dict[str, int]:
    return {"regionSlots": layout.region_slots, "shards": layout.shards, "start": layout.start, "stride": layout.stride}


@dataclass(frozen=True)
class Ledger:
    region_slots: int
    table_name: str
    slots: Mapping[int, SlotRecord] = field(default_factory=dict)
    counters: Mapping[str, CounterRecord] = field(default_factory=dict)
    # Whether any recorded version served keys nobody configured (strictKeys false), and which default
    # keys a recorded version served unconfigured (the default key is served even with strictKeys).
    # A version may run in some region long after a newer one was recorded, so both only ever grow.
    unconfigured_keys_served: bool = True
    default_keys_served: frozenset[str] = frozenset()
    # Every series ever deployed, as cdk.json writes it: permanent field by field, never removed.
    series: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Every layout change, oldest first: per key, the fence its old lanes stopped at and both layouts.
    epochs: tuple[KeyEpoch, ...] = ()
    # The last recorded version's `recorded` settings (deployed.py); None: a ledger from before them.
    deployed: Mapping[str, Any] | None = None
    # A fence `tickets_admin fence` began and has not yet recorded as epochs (synthesis refuses all meanwhile).
    fencing: PendingFence | None = None

    def served_unconfigured(self, key: str) -> bool:
        """Could a recorded version have issued `key`'s tickets with the unconfigured layout?"""
        return self.unconfigured_keys_served or key in self.default_keys_served


def fields_text(fields: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {value!r}" for name, value in sorted(fields.items()))


@dataclass(frozen=True)
class Version:
    """One recorded state of the file: `id` hashes `parent` and the services as recorded (version_id)."""

    id: str
    parent: str | None
    change: str  # what the change recorded, for the reader of the file and of a refusal


@dataclass(frozen=True)
class LedgerFile:
    """tickets.lock.json: every service's ledger, by table name, and the versions that led to it, oldest first
    (each stack outputs the one it was synthesised with: tickets_deploy.predeploy)."""

    services: Mapping[str, Ledger]
    versions: tuple[Version, ...]

    @property
    def version(self) -> str | None:
        """The id of the state the file holds (its last version)."""
        return self.versions[-1].id if self.versions else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Is `older` `newer` itself or a version before it in this file's history?"""
        ids = [version.id for version in self.versions]
        return older in ids and newer in ids and ids.index(older) <= ids.index(newer)


VERSION_DIGITS = 16
