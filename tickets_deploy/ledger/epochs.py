"""The ledger's epochs (docs/explanation/epochs-and-fences.md): which keys a config changes the layout of,
whether that is safe, what `tickets_admin fence` records, and the config as a function of the new layout runs it."""

from __future__ import annotations

from dataclasses import replace

from tickets.epochs import FENCE_COMMAND, FENCE_UNDO_COMMAND, Layout
from tickets.settings import CounterConfig
from tickets_deploy.schema import DeploymentConfig

from .model import Change, CounterRecord, KeyEpoch, Ledger, PendingFence

_UNCONFIGURED = CounterConfig()


def latest(ledger: Ledger, key: str) -> KeyEpoch | None:
    epochs = [epoch for epoch in ledger.epochs if epoch.key == key]
    return epochs[-1] if epochs else None


def current(ledger: Ledger, key: str) -> tuple[int, Layout] | None:
    """The epoch and effective layout a key's lanes have now, as far as the ledger knows (None: no
    recorded version could have served it)."""
    epoch = latest(ledger, key)
    if epoch is not None:
        return epoch.number, epoch.new
    if key in ledger.counters:
        recorded = ledger.counters[key]
        return 0, Layout(recorded.start, recorded.stride, recorded.shards, ledger.region_slots)
    if ledger.served_unconfigured(key):
        return 0, _configured(_UNCONFIGURED, unconfigured_region_slots(ledger))
    return None


def unconfigured_region_slots(ledger: Ledger) -> int:
    """The regionSlots under which keys nobody configured were served: those before regionSlots first
    changed (after that, strictKeys is true for good)."""
    moved = [
        epoch.old.region_slots for epoch in ledger.epochs if epoch.old.region_slots != epoch.configured.region_slots
    ]
    return min(moved) if moved else ledger.region_slots  # regionSlots only grows: the first is the smallest


def served_keys(config: DeploymentConfig) -> list[str]:
    """The keys whose lanes the config lays out: its counters and its default key."""
    return sorted({*config.counters, config.default_key})


def layout_changes(config: DeploymentConfig, ledger: Ledger) -> list[Change]:
    """Every key whose layout the config changes from the one its lanes have now."""
    changes = []
    for key in served_keys(config):
        now, epoch = current(ledger, key), latest(ledger, key)
        if now is not None and (epoch.configured if epoch is not None else now[1]) != _target(config, key):
            changes.append(Change(key, now[0] + 1, now[1], _target(config, key)))
    return changes


def fence_refusals(config: DeploymentConfig, ledger: Ledger) -> list[str]:
    """Layout changes no fence can make safe: refused before anything is written."""
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
            f"{config.region_slots}. A region not yet deployed, or rolled back, can create such a key's lanes in "
            "the old layout at any time, up to max, and no fence can bound what it will issue. Set strictKeys true "
            "in the same change (configure every key callers use; they are fenced with it) "
            "(docs/explanation/epochs-and-fences.md)."
        )
    return problems


def pending_problem(pending: PendingFence) -> str:
    """Why nothing can be deployed while a fence is pending, and the two ways out."""
    return (
        f"fencing: `{FENCE_COMMAND}` began fence {pending.id} ({pending.describe()}) and has not recorded it: the old "
        "lanes it stopped, in some regions or all, answer 503 until it is finished or undone, so no config is "
        f"accepted meanwhile. Finish it: give cdk.json those layouts and run `{FENCE_COMMAND}` (every region at "
        f"once, or `--region R` until each region is fenced); or undo it: `{FENCE_UNDO_COMMAND}`, which puts the "
        "stopped lanes back (docs/how-to/change-a-layout.md)."
    )


def synthesis_problems(config: DeploymentConfig, ledger: Ledger) -> list[str]:
    """Why synthesis refuses `config`'s layout changes: a fence begun and not finished (whatever the config), unsafe
    changes, and a regionSlots change whose keys are not yet fenced (a key's own stride, shards or start are the
    ledger's counter rules, which accept a change its latest epoch covers)."""
    if ledger.fencing is not None:
        return [pending_problem(ledger.fencing)]
    problems, changes = [], layout_changes(config, ledger)
    unfenced = [change.key for change in changes if change.old.region_slots != config.region_slots]
    growing = bool(unfenced) and config.region_slots > ledger.region_slots
    if growing:
        problems.append(
            f"regionSlots: the ledger records {ledger.region_slots}, cdk.json says {config.region_slots}. Every "
            "counter's lanes are laid out over regionSlots (step = stride x regionSlots x shards), so the new lanes "
            f"of {', '.join(unfenced)} would reissue numbers the old ones issued unless they begin above a fence: "
            f"run `{FENCE_COMMAND}` (it stops the old lanes in every region and records the fence in the ledger), "
            "then synthesise again (docs/how-to/change-a-layout.md); or keep regionSlots at "
            f"{ledger.region_slots} and add regions only on its free slots (docs/how-to/add-a-region.md)."
        )
    elif config.region_slots == ledger.region_slots:
        problems += [_unconfigured_problem(change) for change in changes if _moves_unconfigured(change)]
    # Keys whose last fence cdk.json no longer follows, where the counter rules see nothing to refuse (the layout
    # before the fence put back, or one the recorded counters agree with): served, they would take the lanes the
    # fence stopped (or lanes no fence bounds) instead of the fenced epoch's.
    said = set(unfenced) if growing else set()
    for change in changes:
        epoch = latest(ledger, change.key)
        if epoch is not None and change.key not in said and not _counter_rules_refuse(config, ledger, change.key):
            problems.append(_unfollowed_problem(change, epoch))
    return problems + fence_refusals(config, ledger)


def _counter_rules_refuse(config: DeploymentConfig, ledger: Ledger, key: str) -> bool:
    """Do the ledger's counter rules (rules.py) already refuse this key's start, stride or shards?"""
    recorded = ledger.counters.get(key)
    return recorded is not None and recorded.numbering != CounterRecord.of(_counter(config, key)).numbering


def _unfollowed_problem(change: Change, epoch: KeyEpoch) -> str:
    return (
        f"counters.{change.key}: cdk.json gives {change.key} {change.configured.describe()}, not the layout its last "
        f"fence (epoch {epoch.number}, at {epoch.fence}) moved it to, {epoch.configured.describe()}. Served, it "
        "would take tickets from lanes that fence stopped (every request a 503) instead of epoch "
        f"{epoch.number}'s. Give {change.key} epoch {epoch.number}'s layout again, or run `{FENCE_COMMAND}` to move "
        "it to this one above a new fence, then synthesise again (docs/how-to/change-a-layout.md)."
    )


def _moves_unconfigured(change: Change) -> bool:
    """A key served unconfigured under an older regionSlots, now configured (or made the default key) with
    the unconfigured start, stride and shards: the counter rules see no new layout, but its lanes' step changed."""
    unconfigured = _configured(_UNCONFIGURED, change.configured.region_slots)
    return change.configured == unconfigured and change.old.region_slots != change.configured.region_slots


def _unconfigured_problem(change: Change) -> str:
    return (
        f"counters.{change.key}: a recorded version served {change.key} unconfigured with {change.old.describe()}; "
        f"cdk.json serves it with {change.configured.describe()}. Its old lanes may hold any number from their start "
        f"on: run `{FENCE_COMMAND}` to stop them and begin above a fence, then synthesise again "
        "(docs/explanation/epochs-and-fences.md)."
    )


def covered(config: DeploymentConfig, ledger: Ledger, key: str) -> bool:
    """Is the key's configured layout the one its latest epoch moved it to?"""
    epoch = latest(ledger, key)
    return epoch is not None and epoch.configured == _target(config, key)


def applied(config: DeploymentConfig, ledger: Ledger | None) -> DeploymentConfig:
    """`config` as its functions run it: each key that changed layout serves its latest epoch, from its
    start above the fence. Keys whose config is not (yet) the recorded epoch's are left as they are
    (synthesis refuses them)."""
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
    """The ledger with these epochs added (after `fence` stopped their old lanes everywhere), no fence pending."""
    return replace(ledger, epochs=(*ledger.epochs, *epochs), fencing=None)


def _counter(config: DeploymentConfig, key: str) -> CounterConfig:
    """The key's counter as `config` serves it: configured, or as an unconfigured key."""
    return config.counters.get(key, _UNCONFIGURED)


def _target(config: DeploymentConfig, key: str) -> Layout:
    return _configured(_counter(config, key), config.region_slots)


def _configured(counter: CounterConfig, region_slots: int) -> Layout:
    return Layout(counter.start, counter.stride, counter.shards, region_slots)
