"""What a local server checks of its layout before it serves (docs/reference/local-server.md), so that a server
started from another checkout (no ledger, an older one, `--config-json`) never serves a layout older than its
table's: only the ledger records whether a key changed layout above a fence (ServedLayout.require), and the table
tells what it can: a key's lanes of a later epoch than the one served, or of that epoch stopped by a fence its
ledger does not have pending (check_table).
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


def check_table(items: list[dict[str, Any]], config: DeploymentConfig, ledger: Ledger | None) -> None:
    """Refuse to serve (ConfigError) where the table's `items` record a later layout than this server would serve
    (`config`, the ledger applied)."""
    pending = ledger.fencing.id if ledger is not None and ledger.fencing is not None else None
    problems = []
    for item in items:
        name = item[COUNTER_KEY]["S"]
        key, _, epoch_text = name.partition(SHARD_SEPARATOR)[0].partition(EPOCH_SEPARATOR)
        counter = config.counters.get(key)
        if not is_counter_item(name) or (counter is None and config.strict_keys and key != config.default_key):
            continue
        served, epoch = counter.epoch if counter is not None else 0, int(epoch_text or 0)
        if epoch > served:
            problems.append(
                f"{name}: {key}'s lanes of epoch {epoch} (above a fence); this server would serve epoch {served}"
            )
        elif epoch == served and number(item, STEP) == STOPPED and fenced_by(item) != pending:
            problems.append(f"{name}: stopped by fence {fenced_by(item)}; this server would serve it (epoch {served})")
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
        """With --ledger, else the ledger beside --config (none for a config given as JSON). One that cannot be read
        (git conflict markers, a broken file) is refused: served without it, a key fenced there would be served in
        its old layout."""
        path = Path(ledger) if ledger is not None else None
        if path is not None and not path.exists():
            raise ConfigError(f"--ledger {path}: no such file")
        if path is None and config_path is not None:
            path = ledger_path_beside(Path(config_path))
        try:
            file = read_ledger_file(path) if path is not None and path.exists() else None
        except LedgerError as err:
            raise ConfigError(f"the ledger is refused, so nothing is served: {err}") from None
        return cls(written, path, file, without_ledger)

    @property
    def ledger(self) -> Ledger | None:
        """The ledger's record of this service (None: no ledger, or none of it)."""
        return self.file.services.get(self.written.config.table_name) if self.file is not None else None

    @property
    def deployment(self) -> LocalDeployment:
        return LocalDeployment(applied(self.written.config, self.ledger), self.written.region)

    def require(self, *, persistent: bool) -> None:
        """On an endpoint, whose tables are a deployment's, a server needs a ledger that records its service (or
        --without-ledger) and the config as written as synthesis recorded it: a layout changed without the fence
        that ledger records, or a region moved, is refused there as at synthesis, and so is a change not yet
        synthesised."""
        written, file = self.written.config, self.file
        if not persistent:
            return
        if file is None or written.table_name not in file.services:
            if self.without_ledger:
                return
            raise ConfigError(
                "no ledger records this config's service, and on an endpoint the tables are a deployment's: a key "
                "whose layout changed above a fence would be served in its first layout, repeating tickets. "
                f"{GIVE_IT}; or, for a deployment whose layouts never changed, {WITHOUT_LEDGER}"
            )
        try:
            recorded = record_services(file, {written.table_name: written}).version == file.version
        except LedgerError as err:
            raise ConfigError(
                f"the ledger refuses this config, as synthesis would, and on an endpoint the tables are a "
                f"deployment's: {err}\n{GIVE_IT} (one that records what the config needs)"
            ) from None
        if not recorded:  # accepted, not yet synthesised: what it records could meet another unsynthesised change
            raise ConfigError(
                "the ledger does not record this config: on an endpoint, whose tables are a deployment's, a server "
                f"serves only a config its ledger records. Synthesise it (make synth) and commit the ledger. "
                f"{GIVE_IT} (one that records it)"
            )

    def table(self, client: Any) -> list[dict[str, Any]]:
        """The counter table's items, once they agree with the layout served (check_table)."""
        deployment = self.deployment
        items = list(scan(client, deployment.counter_table))
        check_table(items, deployment.config, self.ledger)
        return items
