"""The rollout rule (docs/explanation/ledger.md#the-rollout-rule) and the layouts a config changes above fences
(docs/explanation/epochs-and-fences.md): `record` gives a service's next ledger for a config, or a LedgerError."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tickets.epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, Layout
from tickets.opaque import OpaqueConfig
from tickets.series.config import NO_PERIOD_NAME, SeriesConfig
from tickets.settings import CounterConfig
from tickets_deploy.rules import describe
from tickets_deploy.schema import DeploymentConfig

from ..series_rules import check_format
from . import model
from .model import UNCONFIGURED, Change, CounterRecord, KeyEpoch, Ledger, LedgerError, SlotRecord, deployed_settings


def latest(ledger: Ledger, key: str) -> KeyEpoch | None:
    return next((epoch for epoch in reversed(ledger.epochs) if epoch.key == key), None)


def current(ledger: Ledger, key: str) -> tuple[int, Layout] | None:
    """The epoch and layout a key's lanes have now (None: no recorded version could have served it)."""
    epoch = latest(ledger, key)
    if epoch is not None:
        return epoch.number, epoch.new
    if key in ledger.counters:
        return 0, _configured(ledger.counters[key], ledger.region_slots)
    if ledger.served_unconfigured(key):
        return 0, _configured(UNCONFIGURED, unconfigured_region_slots(ledger))
    return None


def unconfigured_region_slots(ledger: Ledger) -> int:
    """The regionSlots unconfigured keys were served with: before it first changed (strictKeys is true since)."""
    moved = [
        epoch.old.region_slots for epoch in ledger.epochs if epoch.old.region_slots != epoch.configured.region_slots
    ]
    return min(moved) if moved else ledger.region_slots  # regionSlots only grows: the first is the smallest


def served_keys(config: DeploymentConfig) -> list[str]:
    return sorted({*config.counters, config.default_key})


def layout_changes(config: DeploymentConfig, ledger: Ledger) -> list[Change]:
    changes = []
    for key in served_keys(config):
        now, epoch = current(ledger, key), latest(ledger, key)
        if now is not None and (epoch.configured if epoch is not None else now[1]) != _target(config, key):
            changes.append(Change(key, now[0] + 1, now[1], _target(config, key)))
    return changes


def fence_refusals(config: DeploymentConfig, ledger: Ledger) -> list[str]:
    """Layout changes no fence can make safe."""
    problems = []
    if config.region_slots < ledger.region_slots:
        problems.append(
            f"regionSlots: the ledger records {ledger.region_slots}, cdk.json says {config.region_slots}. regionSlots "
            f"only grows: keep {ledger.region_slots} or more (docs/how-to/change-a-layout.md)."
        )
    moves_unconfigured = config.region_slots != unconfigured_region_slots(ledger)
    if ledger.unconfigured_keys_served and moves_unconfigured and not config.strict_keys:
        problems.append(
            f"strictKeys: a recorded version served keys nobody configured (strictKeys false) in the layout of "
            f"regionSlots {unconfigured_region_slots(ledger)}, and cdk.json serves them with regionSlots "
            f"{config.region_slots}: no fence bounds what a region still on the old version issues. Set strictKeys "
            "true in the same change, configuring every key callers use (docs/explanation/epochs-and-fences.md)."
        )
    return problems


def synthesis_problems(config: DeploymentConfig, ledger: Ledger) -> list[str]:
    """Why synthesis refuses `config`'s layout changes (a key's own start, stride and shards are _counter_problems')."""
    pending = ledger.fencing
    if pending is not None:
        return [
            f"fencing: `{FENCE_COMMAND}` began fence {pending.id} ({pending.describe()}) and has not recorded it: the "
            "lanes it stopped answer 503 until it is finished or undone. Finish it: give cdk.json those layouts and "
            f"run `{FENCE_COMMAND}`; or undo it: `{FENCE_UNDO_COMMAND}` (docs/how-to/change-a-layout.md)."
        ]
    problems, changes = [], layout_changes(config, ledger)
    unfenced = [change.key for change in changes if change.old.region_slots != config.region_slots]
    growing = bool(unfenced) and config.region_slots > ledger.region_slots
    if growing:
        problems.append(
            f"regionSlots: the ledger records {ledger.region_slots}, cdk.json says {config.region_slots}. The new "
            f"lanes of {', '.join(unfenced)} would reissue numbers the old ones issued unless they begin above a "
            f"fence: run `{FENCE_COMMAND}`, then synthesise again (docs/how-to/change-a-layout.md); or keep "
            f"regionSlots at {ledger.region_slots} and add regions on its free slots (docs/how-to/add-a-region.md)."
        )
    elif config.region_slots == ledger.region_slots:
        problems += [
            f"counters.{change.key}: a recorded version served {change.key} unconfigured with {change.old.describe()}; "
            f"cdk.json serves it with {change.configured.describe()}: run `{FENCE_COMMAND}` to stop its old lanes and "
            "begin above a fence (docs/explanation/epochs-and-fences.md)."
            for change in changes
            if _moves_unconfigured(change)
        ]
    # Keys whose last fence cdk.json no longer follows where the counter rules see nothing to refuse.
    said = set(unfenced) if growing else set()
    for change in changes:
        epoch = latest(ledger, change.key)
        if epoch is not None and change.key not in said and not _counter_rules_refuse(config, ledger, change.key):
            problems.append(
                f"counters.{change.key}: cdk.json gives {change.key} {change.configured.describe()}, not the layout "
                f"its last fence (epoch {epoch.number}, at {epoch.fence}) moved it to, {epoch.configured.describe()}. "
                f"Give it epoch {epoch.number}'s layout again, or run `{FENCE_COMMAND}` to move it above a new fence "
                "(docs/how-to/change-a-layout.md)."
            )
    return problems + fence_refusals(config, ledger)


def _counter_rules_refuse(config: DeploymentConfig, ledger: Ledger, key: str) -> bool:
    recorded = ledger.counters.get(key)
    return recorded is not None and recorded.numbering != CounterRecord.of(_counter(config, key)).numbering


def _moves_unconfigured(change: Change) -> bool:
    """Laid out as when served unconfigured, under another regionSlots: new lanes the counter rules do not see."""
    unconfigured = _configured(UNCONFIGURED, change.configured.region_slots)
    return change.configured == unconfigured and change.old.region_slots != change.configured.region_slots


def covered(config: DeploymentConfig, ledger: Ledger, key: str) -> bool:
    epoch = latest(ledger, key)
    return epoch is not None and epoch.configured == _target(config, key)


def applied(config: DeploymentConfig, ledger: Ledger | None) -> DeploymentConfig:
    """`config` as its functions run it: each key whose config is its latest epoch's serves it above the fence."""
    if ledger is None or not ledger.epochs:
        return config
    counters = dict(config.counters)
    for key in served_keys(config):
        epoch = latest(ledger, key)
        if epoch is not None and epoch.configured == _target(config, key):
            counters[key] = replace(_counter(config, key), start=epoch.start, epoch=epoch.number, fence=epoch.fence)
    return replace(config, counters=counters)


def record_epochs(ledger: Ledger, epochs: list[KeyEpoch]) -> Ledger:
    return replace(ledger, epochs=(*ledger.epochs, *epochs), fencing=None)


def _counter(config: DeploymentConfig, key: str) -> CounterConfig:
    return config.counters.get(key, CounterConfig())


def _target(config: DeploymentConfig, key: str) -> Layout:
    return _configured(_counter(config, key), config.region_slots)


def _configured(counter: CounterConfig | CounterRecord, region_slots: int) -> Layout:
    return Layout(counter.start, counter.stride, counter.shards, region_slots)


def record(
    config: DeploymentConfig, previous: Ledger | None, account: str | None = None, *, upgrade: bool = False
) -> Ledger:
    """The ledger after deploying `config` (to `account`, when known); `previous` None starts a deployment.
    `upgrade`: record the `deployed` settings in a ledger from before them (synthesis does; a check does not)."""
    problems = _new_series_problems(config, previous)
    if previous is None:
        previous = Ledger(config.region_slots, config.table_name, unconfigured_keys_served=False, deployed={})
    else:
        if config.table_name != previous.table_name:
            problems.append(table_problem(previous.table_name, config.table_name))
        problems += [
            *synthesis_problems(config, previous),
            *_slot_problems(config, previous),
            *_counter_problems(config, previous),
            *_opaque_problems(config, previous),
            *_series_problems(config, previous),
        ]
    if problems:
        raise LedgerError("\n".join(problems))

    slots = {slot: replace(entry, retired=True) for slot, entry in previous.slots.items()}
    for region, slot in config.regions.items():
        accounts = set(slots[slot].accounts) if slot in slots else set()
        if account is not None:
            accounts.add(account)
        slots[slot] = SlotRecord(region, accounts=tuple(sorted(accounts)))
    counters = {**previous.counters, **{key: CounterRecord.of(c) for key, c in config.counters.items()}}
    series = {**previous.series, **{key: s.to_json() for key, s in config.series.items()}}
    return replace(
        previous,  # its epochs, and no pending fence (synthesis_problems refuses every config while one is)
        region_slots=config.region_slots,  # as recorded, or grown above fences (synthesis_problems)
        slots=dict(sorted(slots.items())),
        counters=dict(sorted(counters.items())),
        unconfigured_keys_served=previous.unconfigured_keys_served or not config.strict_keys,
        default_keys_served=previous.default_keys_served | {config.default_key} - set(config.counters),
        series=dict(sorted(series.items())),
        deployed=deployed_settings(config) if previous.deployed is not None or upgrade else None,
    )


def _series_problems(config: DeploymentConfig, previous: Ledger) -> Iterator[str]:
    """A recorded series stays, every field as recorded: its journal and numbers were made with them."""
    for key, recorded in previous.series.items():
        where = f"series.{key}"
        series = config.series.get(key)
        if series is None:
            yield (
                f"{where}: the ledger records the series {key} ({model.fields_text(recorded)}), cdk.json no longer "
                f"configures it. A series is never removed. Keep {key} in cdk.json as recorded (it may stay unused)."
            )
            continue
        now = series.to_json()
        for name in sorted(set(recorded) | set(now)):
            if recorded.get(name) != now.get(name):
                yield (
                    f"{where}.{name}: the ledger records {recorded.get(name)!r}, cdk.json says {now.get(name)!r}. "
                    f"Every field of a series is permanent. Keep {key} as recorded, or add a series under a new name."
                )


def _new_series_problems(config: DeploymentConfig, previous: Ledger | None) -> list[str]:
    """A new series whose ids lack {series} would block regionSlots for good: refused while {series} can be added."""
    recorded = previous.series if previous is not None else {}
    return [
        f"series.{key}.format: {series.format!r} lacks {{series}}. With more than one region slot each region "
        "numbers it from start, and its format is permanent, so this service's regionSlots could never grow. Add "
        f"{{series}} now, e.g. {_with_series(series)!r} (first id {_first_id(key, series)!r}; "
        "docs/reference/series.md)."
        for key, series in sorted(config.series.items())
        if key not in recorded and series.format is not None and "series" not in check_format(series.format, key)
    ]


def _with_series(series: SeriesConfig) -> str:
    return (series.format or "").replace("{n", "{series}-{n", 1)


def _first_id(key: str, series: SeriesConfig) -> str | None:
    return replace(series, format=_with_series(series)).render_id(key, NO_PERIOD_NAME, series.start)


def table_problem(recorded: str, configured: str, where: str = "") -> str:
    return (
        f"tableName: the ledger records {recorded!r}{where}, cdk.json says {configured!r}. A new name is a new, "
        f"empty table, where every counter would start again at its start. Keep {recorded!r}."
    )


def _slot_problems(config: DeploymentConfig, previous: Ledger) -> Iterator[str]:
    recorded_slot = {entry.region: slot for slot, entry in previous.slots.items()}
    free = [
        str(slot)
        for slot in range(previous.region_slots)
        if slot not in previous.slots and slot not in config.regions.values()
    ]
    instead = f"never-used slots: {', '.join(free)}" if free else "no slot was never used"
    for region, slot in config.regions.items():
        where = f"regions.{region}"
        if region in recorded_slot and recorded_slot[region] != slot:
            yield (
                f"{where}: the ledger gives {region} slot {recorded_slot[region]}, cdk.json gives slot {slot}. "
                f"Its table holds slot {recorded_slot[region]}'s lanes, whose numbers another region would issue "
                f"again. Keep {region} on slot {recorded_slot[region]}."
            )
            continue
        owner = previous.slots.get(slot)
        if owner is not None and owner.region != region:
            retired = " (retired)" if owner.retired else ""
            yield (
                f"{where}: the ledger gives slot {slot} to {owner.region}{retired}, cdk.json gives it to {region}. "
                f"It would issue the same numbers again. Give {region} a slot never used ({instead})."
            )


_MAKE_FENCE = "with this repository's Makefile, `make deploy FENCE=1` runs it, then synthesises and deploys"


def _counter_problems(config: DeploymentConfig, previous: Ledger) -> Iterator[str]:
    for key, recorded in previous.counters.items():
        where = f"counters.{key}"
        counter = config.counters.get(key)
        if counter is None:
            yield (
                f"{where}: the ledger records {key} ({recorded.describe()}), cdk.json no longer configures it. "
                f"It would be served with the unconfigured layout ({UNCONFIGURED.describe()}). Keep {key} in cdk.json "
                "as recorded (it may stay unused)."
            )
            continue
        for name in ("start", "stride", "shards"):
            old, new = getattr(recorded, name), getattr(counter, name)
            if old != new and not covered(config, previous, key):
                raise_it = f"`.venv/bin/python -m tickets_admin raise {key} --above N` to skip ahead"
                yield (
                    f"{where}.{name}: the ledger records {old}, cdk.json says {new}. New lanes would overlap the "
                    f"numbers old lanes issued. Keep {name}{f' ({raise_it})' if name == 'start' else ''}; for a "
                    f"different numbering, add a new counter key, or change {name} above a fence: `{FENCE_COMMAND}` "
                    f"({_MAKE_FENCE}; docs/how-to/change-a-layout.md)."
                )
    for key, counter in config.counters.items():
        layout = CounterRecord.of(counter)
        if key in previous.counters or layout.numbering == UNCONFIGURED or not previous.served_unconfigured(key):
            continue
        if covered(config, previous, key):
            continue  # its unconfigured lanes were stopped at a fence
        if key in previous.default_keys_served and not previous.unconfigured_keys_served:
            served = f"{key} was the defaultKey of a recorded version that did not configure it"
        else:
            served = "a recorded version served keys nobody configured (strictKeys false)"
        yield (
            f"counters.{key}: a new counter with {layout.describe()}, but {served}, with the unconfigured layout "
            f"({UNCONFIGURED.describe()}): a region still on that version would repeat its tickets. Fence it: "
            f"`{FENCE_COMMAND}` stops the unconfigured lanes of {key} in every region ({_MAKE_FENCE}). Or keep the "
            f"unconfigured start, stride and shards, then `.venv/bin/python -m tickets_admin raise {key} --above N` "
            "in each region (docs/explanation/ledger.md#the-rollout-rule)."
        )


def _opaque_problems(config: DeploymentConfig, previous: Ledger) -> Iterator[str]:
    """A counter is opaque from its first ticket or never, its settings fixed but for a key version that grows."""
    for key, counter in config.counters.items():
        recorded = previous.counters.get(key)
        if recorded is not None:
            yield from _opaque_change(key, recorded.opaque, counter.opaque)
        elif counter.opaque is not None and previous.served_unconfigured(key):
            yield (
                f"counters.{key}.opaque: a recorded version served {key} unconfigured, so it may have handed out plain "
                "tickets, and a counter is opaque from its first ticket: an id could equal one of them where callers "
                "keep both. Give opaque ids a key never served (with strictKeys true, nothing serves an unknown key)."
            )


def _opaque_change(key: str, old: OpaqueConfig | None, now: OpaqueConfig | None) -> list[str]:
    where = f"counters.{key}.opaque"
    if old == now:
        return []
    if old is None or now is None:
        was, becomes = ("plain tickets", "ids") if old is None else ("ids", "plain tickets")
        return [
            f"{where}: the ledger records {key} with {describe(old) if old else 'no opaque settings'}; cdk.json "
            f"says {describe(now) if now else 'none'}. The counter handed out {was}: {becomes} beside them could equal "
            f"one of them where callers keep both. Keep {key} as recorded; for {becomes}, add a new counter key."
        ]
    if replace(now, key_version=old.key_version) != old:
        return [
            f"{where}: the ledger records {describe(old)}; cdk.json says {describe(now)}. The ids already handed "
            "out were made with the recorded settings: with others, a ticket would get another id, and an id "
            "another ticket. Keep them as recorded; for other ids, add a new counter key."
        ]
    if now.key_version < old.key_version:
        return [
            f"{where}.keyVersion: the ledger records {old.key_version}, cdk.json says {now.key_version}. Rotation "
            "only goes forward: a key version left behind is retired for good (it may have leaked). Keep "
            f"{old.key_version}, or rotate to a new one up to keyVersions ({old.key_versions})."
        ]
    return []  # a newer key version: ids of every version stay distinct (tickets.opaque)
