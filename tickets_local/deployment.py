"""One local deployment (cdk.json's config, one region, the settings the stack would give it), and what a server checks
of its table before it serves (docs/reference/local-server.md; docs/explanation/opaque-ids.md#a-key-is-what-it-was)."""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickets.epochs import STOPPED, key_and_epoch
from tickets.lane_item import STEP, Item, fenced_by, number
from tickets.opaque import OpaqueKeyError
from tickets.opaque.secret import StoredKeys, replaced
from tickets.settings import Settings
from tickets.tables import (
    COUNTER_KEY,
    FINGERPRINT_PREFIX,
    IDEMPOTENCY_TABLE_SUFFIX,
    SERIES_TABLE_SUFFIX,
    WORKERS_TABLE_SUFFIX,
    is_counter_item,
)
from tickets_admin.listing import scan
from tickets_deploy.config import load_config_file, parse_config, pick_region
from tickets_deploy.environment import handler_environment, region_settings
from tickets_deploy.ledger import (
    LEDGER_FILE,
    Ledger,
    LedgerError,
    LedgerFile,
    applied,
    check_config_file,
    ledger_path_beside,
    read_ledger_file,
    record_services,
)
from tickets_deploy.opaque_keys import key_versions_in_use, new_key_file_text, read_key_file
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import DeploymentConfig


@dataclass(frozen=True)
class LocalDeployment:
    config: DeploymentConfig
    region: str

    @property
    def slot(self) -> int:
        return self.config.regions[self.region]

    @property
    def counter_table(self) -> str:
        return self.config.table_name  # the stack's, so tickets_admin finds it by default

    @property
    def idempotency_table(self) -> str:
        return f"{self.counter_table}{IDEMPOTENCY_TABLE_SUFFIX}"

    @property
    def series_table(self) -> str | None:
        return f"{self.counter_table}{SERIES_TABLE_SUFFIX}" if self.settings.series else None

    @property
    def workers_table(self) -> str | None:
        return f"{self.counter_table}{WORKERS_TABLE_SUFFIX}" if self.settings.workers else None

    @functools.cached_property  # read at every build of the app, so at every reset
    def settings(self) -> Settings:
        return region_settings(self.config, self.region)

    def powertools_environment(self, *, verbose: bool) -> dict[str, str]:
        function_environment = handler_environment(
            self.config,
            self.region,
            counter_table=self.counter_table,
            idempotency_table=self.idempotency_table,
            series_table=self.series_table,
            workers_table=self.workers_table,
        )
        return {
            **{name: value for name, value in function_environment.items() if name.startswith("POWERTOOLS_")},
            "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon here
            "POWERTOOLS_LOG_LEVEL": "INFO" if verbose else "WARNING",
            "POWERTOOLS_METRICS_DISABLED": "false" if verbose else "true",
        }


def load_deployment(config_path: str | Path, region: str | None) -> LocalDeployment:
    """cdk.json's config as written (ServedLayout applies its ledger), at `region`; or ConfigError."""
    config = load_config_file(config_path)
    return LocalDeployment(config, pick_region(config, region, config_path))


def ledger_refusal(config_path: str | Path, ledger: str | Path | None = None) -> str | None:
    """Why synthesis would refuse cdk.json against the ledger (`ledger`, else the one beside it; None: no refusal, or
    no ledger), which the server warns of: it serves a config as written on its own tables, so a change can be tried."""
    path = Path(config_path)
    ledger_path = Path(ledger) if ledger is not None else ledger_path_beside(path)
    if not ledger_path.exists():
        return None
    try:
        check_config_file(path, load_config_file(path), ledger_path)
    except (LedgerError, ConfigError) as err:
        return str(err)
    return None


def deployment_from_config(tickets: Any, region: str | None, source: str = "the config") -> LocalDeployment:
    """The same from cdk.json's `tickets` object itself (a dict, as tickets_local.testing passes it)."""
    try:
        config = parse_config(tickets)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    return LocalDeployment(config, pick_region(config, region, source))


GIVE_IT = f"Give the server its deployment's ledger: --ledger PATH, or {LEDGER_FILE} beside --config"


def check_table(items: list[dict[str, Any]], config: DeploymentConfig, ledger: Ledger | None) -> None:
    """Refuse to serve (ConfigError) where the table's `items` record a later layout than this server would serve
    (`config`, the ledger applied): only the ledger knows a fence the table does not show yet."""
    pending = ledger.fencing.id if ledger is not None and ledger.fencing is not None else None
    problems = []
    for item in items:
        name = item[COUNTER_KEY]["S"]
        key, epoch = key_and_epoch(name)
        counter = config.counters.get(key)
        if not is_counter_item(name) or (counter is None and config.strict_keys and key != config.default_key):
            continue
        served = counter.epoch if counter is not None else 0
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
        """With --ledger, else the ledger beside --config (none for a config given as JSON); refused if unreadable."""
        if ledger is not None and not Path(ledger).exists():
            raise ConfigError(f"--ledger {ledger}: no such file")
        beside = ledger_path_beside(Path(config_path)) if config_path is not None else None
        path = Path(ledger) if ledger is not None else beside
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
        """On an endpoint, whose tables are a deployment's: a ledger that records this service (or --without-ledger),
        and records the config as written, as synthesis would."""
        written, file = self.written.config, self.file
        if not persistent or (self.ledger is None and self.without_ledger):
            return
        if file is None or self.ledger is None:
            raise ConfigError(
                "no ledger records this config's service, and on an endpoint a key whose layout changed above a fence "
                f"would be served in its first layout, repeating tickets. {GIVE_IT}; or, for a deployment whose "
                "layouts never changed, --without-ledger"
            )
        try:
            recorded = record_services(file, {written.table_name: written}).version == file.version
        except LedgerError as err:
            raise ConfigError(
                f"the ledger refuses this config, as synthesis would: {err}\n{GIVE_IT} (one that records what the "
                "config needs)"
            ) from None
        if not recorded:  # accepted, not yet synthesised: what it records could meet another unsynthesised change
            raise ConfigError(
                "the ledger does not record this config, and on an endpoint a server serves only a config its ledger "
                f"records: synthesise it (make synth) and commit the ledger. {GIVE_IT} (one that records it)"
            )

    def table(self, client: Any) -> list[dict[str, Any]]:
        """The counter table's items, once they agree with the layout served (check_table)."""
        deployment = self.deployment
        items = list(scan(client, deployment.counter_table))
        check_table(items, deployment.config, self.ledger)
        return items


class LocalKeys:
    """Where this server's keys are (`path`), whether it made them (`made`), and the function's reader of them."""

    def __init__(self, path: Path, made: bool, temporary: Path | None = None):
        self.path, self.made, self._temporary = path, made, temporary
        self.stored = StoredKeys(lambda: path.read_text(encoding="utf-8"), f"the key file {path}")

    def describe(self, endpoint_url: str | None) -> str:
        made = "made at start" if self.made else "given"
        table = f"--endpoint-url {endpoint_url}" if endpoint_url else "--no-table-check"
        return f"{self.path} ({made}; .venv/bin/python -m tickets_admin decode KEY ID --key-file {self.path} {table})"

    def close(self) -> None:
        """Forget keys made for this run only; a given file stays."""
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


def open_keys(
    config: DeploymentConfig, key_file: str | Path | None, persistent: bool, table: Sequence[Item], new_key_file: bool
) -> LocalKeys | None:
    """The keys for `config`'s opaque counters (None without any), checked against the counter `table`'s items.
    `persistent`: the tables outlive the server."""
    versions = sorted(key_versions_in_use(config))
    if not versions:
        return None
    items = {item[COUNTER_KEY]["S"]: item for item in table}
    if key_file is None and persistent:
        raise ConfigError(
            "opaque counters on an endpoint need their key file: a new key at each start could give a later ticket "
            "the id of an earlier one. Give one with --key-file PATH (made there if missing; make serve "
            "ENDPOINT_URL=... KEY_FILE=.tickets-local/keys.json)"
        )
    made = key_file is None or not Path(key_file).exists()
    if made:
        _refuse_a_new_key(config, items, key_file, new_key_file)
    path = Path(key_file or Path(tempfile.mkdtemp(prefix="tickets-local-keys-")) / "opaque-keys.json")
    if made:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=False)  # readable by its owner alone
        path.write_text(new_key_file_text(range(1, versions[-1] + 1)), encoding="utf-8")
    try:
        held = read_key_file(path)
    except OpaqueKeyError as err:
        raise ConfigError(f"--key-file {err}") from None
    missing = [version for version in versions if version not in held]
    if missing:
        raise ConfigError(
            f"--key-file {path} holds key versions {', '.join(map(str, sorted(held)))}, not {missing[0]}, which an "
            f"opaque counter's keyVersion asks for: add that version's key (.venv/bin/python -m tickets_admin encode "
            "--help shows the format)"
        )
    for version in versions:
        problem = replaced(version, held[version], items.get(f"{FINGERPRINT_PREFIX}{version}"), f"--key-file {path}")
        if problem is not None:
            raise ConfigError(problem)
    return LocalKeys(path, made, temporary=path.parent if key_file is None else None)


def _refuse_a_new_key(config: DeploymentConfig, items: dict[str, Item], key_file: object, new_key_file: bool) -> None:
    opaque = {key for key, counter in config.counters.items() if counter.opaque is not None}
    versions = sorted(
        int(name.removeprefix(FINGERPRINT_PREFIX)) for name in items if name.startswith(FINGERPRINT_PREFIX)
    )
    lanes = sorted(name for name in items if key_and_epoch(name)[0] in opaque)
    if versions:
        what = f"ids of key versions {', '.join(map(str, versions))} (their keys' fingerprints are recorded)"
    elif lanes and not new_key_file:
        what = f"ids ({', '.join(lanes[:3])} issued before keys' fingerprints were recorded; --new-key-file makes one)"
    else:
        return
    raise ConfigError(
        f"{'--key-file ' + str(key_file) if key_file else 'no --key-file'}: no key file, and the counter table has "
        f"issued {what}: a new key would give new tickets the ids of old ones. Give the server the key file those ids "
        "were made with"
    )
