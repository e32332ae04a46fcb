"""The ledger's epochs (docs/explanation/epochs-and-fences.md): the layouts a config changes, whether a fence makes
that safe, and the config as the function runs it above its fences."""

from __future__ import annotations

from dataclasses import replace

from tickets.epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, Layout
from tickets.settings import CounterConfig
from tickets_deploy.schema import DeploymentConfig

from .model import Change, CounterRecord, KeyEpoch, Ledger

_UNCONFIGURED = CounterConfig()


def latest(ledger: Ledger, key: str) -> KeyEpoch | None:
    epochs = [epoch for epoch in ledger.epochs if epoch.key == key]
    return epochs[-1] if epochs else None


def current(ledger: Ledger, key: str) -> tuple[int, Layout] | None:
    """The epoch and layout a key's lanes have now (None: no recorded version could have served it)."""
    epoch = latest(ledger, key)
    if epoch is not None:
        return epoch.number, epoch.new
    if key in ledger.counters:
        return 0, _configured(ledger.counters[key], ledger.region_slots)
    if ledger.served_unconfigured(key):
        return 0, _configured(_UNCONFIGURED, unconfigured_region_slots(ledger))
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
    """Why synthesis refuses `config`'s layout changes (a key's own start, stride and shards are rules.py's)."""
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
        problems += [_unconfigured_problem(change) for change in changes if _moves_unconfigured(change)]
    # Keys whose last fence cdk.json no longer follows where the counter rules see nothing to refuse.
    said = set(unfenced) if growing else set()
    for change in changes:
        epoch = latest(ledger, change.key)
        if epoch is not None and change.key not in said and not _counter_rules_refuse(config, ledger, change.key):
            problems.append(_unfollowed_problem(change, epoch))
    return problems + fence_refusals(config, ledger)


def _counter_rules_refuse(config: DeploymentConfig, ledger: Ledger, key: str) -> bool:
    recorded = ledger.counters.get(key)
    return recorded is not None and recorded.numbering != CounterRecord.of(_counter(config, key)).numbering


def _unfollowed_problem(change: Change, epoch: KeyEpoch) -> str:
    return (
        f"counters.{change.key}: cdk.json gives {change.key} {change.configured.describe()}, not the layout its last "
        f"fence (epoch {epoch.number}, at {epoch.fence}) moved it to, {epoch.configured.describe()}. Give it epoch "
        f"{epoch.number}'s layout again, or run `{FENCE_COMMAND}` to move it above a new fence "
        "(docs/how-to/change-a-layout.md)."
    )


def _moves_unconfigured(change: Change) -> bool:
    """A key served unconfigured under an older regionSlots, now configured with the unconfigured start, stride and
    shards: the counter rules see no new layout, but its lanes' step changed."""
    unconfigured = _configured(_UNCONFIGURED, change.configured.region_slots)
    return change.configured == unconfigured and change.old.region_slots != change.configured.region_slots


def _unconfigured_problem(change: Change) -> str:
    return (
        f"counters.{change.key}: a recorded version served {change.key} unconfigured with {change.old.describe()}; "
        f"cdk.json serves it with {change.configured.describe()}: run `{FENCE_COMMAND}` to stop its old lanes and "
        "begin above a fence (docs/explanation/epochs-and-fences.md)."
    )


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
        if epoch is None or not covered(config, ledger, key):
            continue
        counters[key] = replace(_counter(config, key), start=epoch.start, epoch=epoch.number, fence=epoch.fence)
    return replace(config, counters=counters)


def record_epochs(ledger: Ledger, epochs: list[KeyEpoch]) -> Ledger:
    return replace(ledger, epochs=(*ledger.epochs, *epochs), fencing=None)


def _counter(config: DeploymentConfig, key: str) -> CounterConfig:
    return config.counters.get(key, _UNCONFIGURED)


def _target(config: DeploymentConfig, key: str) -> Layout:
    return _configured(_counter(config, key), config.region_slots)


def _configured(counter: CounterConfig | CounterRecord, region_slots: int) -> Layout:
    return Layout(counter.start, counter.stride, counter.shards, region_slots)
