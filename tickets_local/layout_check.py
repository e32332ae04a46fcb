"""What a local server checks of its layout before it serves (docs/reference/local-server.md):
the ledger that says each key's epoch, read whole or refused, and the table's own records of fences, so that a server
started from another checkout (no ledger, an older one, `--config-json`) never serves a layout older than its table's.

A config alone cannot tell whether a key changed layout above a fence: only the ledger records it. Without one, a
server on moto in this process serves cdk.json's layouts as first layouts (its tables are new and gone at stop);
on an endpoint, whose tables are a deployment's, it refuses unless told those are its first layouts
(`--without-ledger`), and serves there only a config its ledger records. Either way, the
table tells what it can: a key's lanes of a later epoch than the one this server would serve, or its lanes of that
epoch stopped by a fence its ledger does not have pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickets.epochs import EPOCH_SEPARATOR, SHARD_SEPARATOR, STOPPED
from tickets.lane_item import STEP, fenced_by, number
from tickets.tables import COUNTER_KEY, is_counter_item
from tickets_admin.listing import scan
from tickets_deploy.ledger import (
    LEDGER_FILE,
    Ledger,
    LedgerError,
    LedgerFile,
    applied,
    ledger_path_beside,
    read_ledger_file,
    record_services,
)
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import DeploymentConfig

from .deployment import LocalDeployment

WITHOUT_LEDGER = "--without-ledger"
GIVE_IT = f"Give the server its deployment's ledger: --ledger PATH, or {LEDGER_FILE} beside --config"


def ledger_path(config_path: str | Path | None, given: str | Path | None) -> Path | None:
    """The ledger a server serves with: --ledger, else the one beside --config (none for a config given as JSON)."""
    if given is not None:
        path = Path(given)
        if not path.exists():
            raise ConfigError(f"--ledger {path}: no such file")
        return path
    return ledger_path_beside(Path(config_path)) if config_path is not None else None


def read_ledger(path: Path | None) -> LedgerFile | None:
    """The ledger file at `path` (None: there is none). One that cannot be read (git conflict markers, a broken file)
    is refused: served without it, a key fenced there would be served in its old layout."""
    if path is None or not path.exists():
        return None
    try:
        return read_ledger_file(path)
    except LedgerError as err:
        raise ConfigError(f"the ledger is refused, so nothing is served: {err}") from None


def require_ledger(
    written: DeploymentConfig, file: LedgerFile | None, *, persistent: bool, without_ledger: bool
) -> None:
    """On an endpoint, whose tables are a deployment's, a server needs a ledger that records its service (or
    --without-ledger) and `written` (cdk.json as written) as synthesis recorded it: a layout changed without the fence
    that ledger records, or a region moved, is refused there as at synthesis, and so is a change not yet synthesised."""
    if not persistent:
        return
    if file is None or written.table_name not in file.services:
        if without_ledger:
            return
        raise ConfigError(
            "no ledger records this config's service, and on an endpoint the tables are a deployment's: a key whose "
            "layout changed above a fence would be served in its first layout, repeating tickets. "
            f"{GIVE_IT}; or, for a deployment whose layouts never changed, {WITHOUT_LEDGER}"
        )
    try:
        recorded = record_services(file, {written.table_name: written}).version == file.version
    except LedgerError as err:
        raise ConfigError(
            f"the ledger refuses this config, as synthesis would, and on an endpoint the tables are a deployment's: "
            f"{err}\n{GIVE_IT} (one that records what the config needs)"
        ) from None
    if not recorded:  # accepted, not yet synthesised: what it records could meet another unsynthesised change
        raise ConfigError(
            "the ledger does not record this config: on an endpoint, whose tables are a deployment's, a server "
            f"serves only a config its ledger records. Synthesise it (make synth) and commit the ledger. {GIVE_IT} "
            "(one that records it)"
        )


def table_refusals(items: list[dict[str, Any]], settings_config: DeploymentConfig, ledger: Ledger | None) -> list[str]:
    """Why the table's records refuse the epochs this server would serve (`settings_config`, the ledger applied)."""
    pending = ledger.fencing.id if ledger is not None and ledger.fencing is not None else None
    problems = []
    for item in items:
        name = item[COUNTER_KEY]["S"]
        if not is_counter_item(name):
            continue
        key, _, epoch_text = name.partition(SHARD_SEPARATOR)[0].partition(EPOCH_SEPARATOR)
        served = _served_epoch(settings_config, key)
        if served is None:
            continue
        epoch = int(epoch_text or 0)
        if epoch > served:
            problems.append(
                f"{name}: {key}'s lanes of epoch {epoch} (above a fence); this server would serve epoch {served}"
            )
        elif epoch == served and number(item, STEP) == STOPPED and fenced_by(item) != pending:
            problems.append(f"{name}: stopped by fence {fenced_by(item)}; this server would serve it (epoch {served})")
    return problems


def _served_epoch(config: DeploymentConfig, key: str) -> int | None:
    if key in config.counters:
        return config.counters[key].epoch
    return None if config.strict_keys and key != config.default_key else 0


def check_table(items: list[dict[str, Any]], config: DeploymentConfig, ledger: Ledger | None) -> None:
    """Refuse to serve (ConfigError) where the table's `items` record a later layout than this server would serve."""
    problems = table_refusals(items, config, ledger)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise ConfigError(
            f"the counter table records a later layout than this server's ({shown}). Served, it would repeat tickets "
            f"or answer 503: {GIVE_IT} (the one that records those fences)"
        )


@dataclass(frozen=True)
class ServedLayout:
    """What a server serves: `written` (the config as given) above its ledger's fences (`deployment`)."""

    written: LocalDeployment
    ledger_path: Path | None
    file: LedgerFile | None
    without_ledger: bool

    @classmethod
    def of(
        cls, written: LocalDeployment, config_path: str | Path | None, ledger: str | Path | None, without_ledger: bool
    ) -> ServedLayout:
        path = ledger_path(config_path, ledger)
        return cls(written, path, read_ledger(path), without_ledger)

    @property
    def ledger(self) -> Ledger | None:
        """The ledger's record of this service (None: no ledger, or none of it)."""
        return self.file.services.get(self.written.config.table_name) if self.file is not None else None

    @property
    def deployment(self) -> LocalDeployment:
        return LocalDeployment(applied(self.written.config, self.ledger), self.written.region)

    def require(self, *, persistent: bool) -> None:
        """Before anything is made: the ledger, where the tables are a deployment's (require_ledger)."""
        require_ledger(self.written.config, self.file, persistent=persistent, without_ledger=self.without_ledger)

    def table(self, client: Any) -> list[dict[str, Any]]:
        """The counter table's items, once they agree with the layout served (check_table)."""
        deployment = self.deployment
        items = list(scan(client, deployment.counter_table))
        check_table(items, deployment.config, self.ledger)
        return items
