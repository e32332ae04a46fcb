"""What the deployment ledger holds: per service (Ledger) its slots, layouts, series, fences and `deployed` settings
(config_from_ledger builds a config from them, for `tickets_admin --service`); the file's versions (LedgerFile)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tickets.epochs import Layout, epoch_start
from tickets.opaque import OpaqueConfig
from tickets.settings import CounterConfig
from tickets_deploy.config import parse_config
from tickets_deploy.field import Field, encode_number
from tickets_deploy.rules import ConfigError, describe
from tickets_deploy.schema import COUNTER_FIELDS, FIELDS, DeploymentConfig

LEDGER_FILE = "tickets.lock.json"
COMMENT = (
    "Tickets deployment ledger, kept by cdk synth: per counter table, the region slots, counter settings and "
    "accounts ever deployed, and which keys were ever served unconfigured; and its versions, one line, each "
    "naming its parent, which deployed stacks record so that no rollout can repeat a ticket. Commit it with "
    "cdk.json; never edit, merge or delete it (docs/explanation/ledger.md)."
)
INIT_COMMAND = "python -m tickets_cdk init"
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


# A counter's permanent fields; one whose default is None (opaque) written only when set (older ledgers read alike).
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
        values = {each.name: getattr(self, each.attribute) for each in LAYOUT_FIELDS}
        return {name: value for name, value in values.items() if value is not None}

    def to_json(self) -> dict[str, Any]:
        return {name: v.to_json() if isinstance(v, OpaqueConfig) else v for name, v in self._set().items()}

    def describe(self) -> str:
        set_fields = self._set().items()
        return ", ".join(f"{name} {describe(v) if isinstance(v, OpaqueConfig) else v}" for name, v in set_fields)

    @property
    def numbering(self) -> CounterRecord:
        return replace(self, opaque=None)


# The layout the handler gives a key that cdk.json does not configure (docs/explanation/ledger.md#the-rollout-rule).
UNCONFIGURED = CounterRecord.of(CounterConfig())


@dataclass(frozen=True)
class Change:
    """A key whose layout the config changes: its lanes of `old` (items of epoch `number - 1`) stop at a fence."""

    key: str
    number: int  # 1, 2, ...: the key's items in the new epoch are `key@number`
    old: Layout  # the layout stopped at the fence, with the start its lanes had
    configured: Layout  # the new layout as cdk.json writes it (its start as configured)

    def epoch(self, fence: int) -> KeyEpoch:
        return KeyEpoch(self.key, self.number, self.old, self.configured, fence)

    def describe(self) -> str:
        return f"{self.key} to epoch {self.number} ({self.configured.describe()})"

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.number, "from": _layout_json(self.old), "to": _layout_json(self.configured)}


@dataclass(frozen=True)
class KeyEpoch(Change):
    """A recorded epoch: a Change whose old lanes stopped at `fence`."""

    fence: int  # above every ticket the old layout's lanes issued, in every region

    @property
    def start(self) -> int:
        """The new layout's first ticket (lane 0's)."""
        return epoch_start(self.fence, self.configured.start, self.configured.stride)

    @property
    def new(self) -> Layout:
        return replace(self.configured, start=self.start)

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "fence": self.fence}


@dataclass(frozen=True)
class PendingFence:
    """A fence `tickets_admin fence` began (before a lane stops): synthesis refuses all until it ends or is undone."""

    id: str  # random hex: each lane it stops records it (tickets.lane_item.FENCED_BY)
    changes: tuple[Change, ...]

    def describe(self) -> str:
        return "; ".join(change.describe() for change in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "keys": dict(sorted((change.key, change.to_json()) for change in self.changes))}


def _layout_json(layout: Layout) -> dict[str, int]:
    return {"regionSlots": layout.region_slots, "shards": layout.shards, "start": layout.start, "stride": layout.stride}


@dataclass(frozen=True)
class Ledger:
    region_slots: int
    table_name: str
    slots: Mapping[int, SlotRecord] = field(default_factory=dict)
    counters: Mapping[str, CounterRecord] = field(default_factory=dict)
    # Whether a recorded version served unconfigured keys (strictKeys false), and which default keys it served
    # unconfigured: an old version may run in some region long after, so both only grow.
    unconfigured_keys_served: bool = True
    default_keys_served: frozenset[str] = frozenset()
    # Every series ever deployed, as cdk.json writes it (never removed).
    series: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    epochs: tuple[KeyEpoch, ...] = ()
    # The last version's `recorded` settings (deployed_settings); None: a ledger from before them.
    deployed: Mapping[str, Any] | None = None
    fencing: PendingFence | None = None

    def served_unconfigured(self, key: str) -> bool:
        return self.unconfigured_keys_served or key in self.default_keys_served


def fields_text(fields: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {value!r}" for name, value in sorted(fields.items()))


@dataclass(frozen=True)
class Version:
    """One recorded state of the file: `id` hashes `parent` and the services (version_id)."""

    id: str
    parent: str | None
    change: str  # what the change recorded, for the reader of the file and of a refusal


@dataclass(frozen=True)
class LedgerFile:
    """tickets.lock.json: every service's ledger, by table name, and the versions that led to it, oldest first."""

    services: Mapping[str, Ledger]
    versions: tuple[Version, ...]

    @property
    def version(self) -> str | None:
        return self.versions[-1].id if self.versions else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        ids = [version.id for version in self.versions]
        return older in ids and newer in ids and ids.index(older) <= ids.index(newer)


VERSION_DIGITS = 16


# The `deployed` object: each `recorded` field's deployed value, left out at its default.
DEPLOYED_FIELDS = {each.name: each for each in FIELDS if each.recorded and not each.permanent}
DEPLOYED_COUNTER_FIELDS = {each.name: each for each in COUNTER_FIELDS if each.recorded and not each.permanent}


def deployed_settings(settings: Any, fields: Mapping[str, Field] = DEPLOYED_FIELDS) -> dict[str, Any]:
    found = {}
    for name, each in fields.items():
        value = getattr(settings, each.attribute)
        if name == "counters":
            value = {key: deployed_settings(counter, DEPLOYED_COUNTER_FIELDS) for key, counter in value.items()}
            value = {key: counter for key, counter in value.items() if counter} or each.default
        if value != each.default:
            found[name] = each.encode(value)
    return found


def check_deployed(raw: Any, counters: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The `deployed` object's names; its values are checked by their rules when a config is built from them."""
    if not isinstance(raw, dict) or set(raw) - set(DEPLOYED_FIELDS):
        raise ValueError(f"{where}: expected an object of {', '.join(sorted(DEPLOYED_FIELDS))}")
    recorded_counters = raw.get("counters", {})
    if not isinstance(recorded_counters, dict) or set(recorded_counters) - set(counters):
        raise ValueError(f"{where}.counters: expected an object of recorded counters")
    for key, settings in recorded_counters.items():
        if not isinstance(settings, dict) or not settings or set(settings) - set(DEPLOYED_COUNTER_FIELDS):
            raise ValueError(f"{where}.counters.{key}: expected an object of {', '.join(DEPLOYED_COUNTER_FIELDS)}")
    return raw


def config_from_ledger(service: Ledger, where: str) -> DeploymentConfig:
    if service.deployed is None:
        raise LedgerError(
            f"{where}: {service.table_name}: this ledger was written before it recorded the deployed settings: "
            "synthesise the app once (`cdk synth`) and commit the ledger, or give tickets_admin a cdk.json (--config)."
        )
    regions = {slot.region: number for number, slot in service.slots.items() if not slot.retired}
    if not regions:
        raise LedgerError(f"{where}: {service.table_name}: every region of this service is retired")
    deployed = dict(service.deployed)
    recorded_counters = deployed.pop("counters", {})
    raw = {
        **deployed,
        "tableName": service.table_name,
        "regionSlots": service.region_slots,
        "regions": regions,
        "counters": {
            key: {**{name: encode_number(n) for name, n in layout.to_json().items()}, **recorded_counters.get(key, {})}
            for key, layout in service.counters.items()
        },
        "series": {key: dict(series) for key, series in service.series.items()},
    }
    try:
        return parse_config(raw)
    except ConfigError as err:
        raise LedgerError(f"{where}: {service.table_name}: the ledger's settings are refused: {err}") from None
