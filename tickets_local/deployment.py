"""One local deployment: cdk.json's `tickets` config, one of its regions, and the settings the stack would give it."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickets.settings import Settings
from tickets.tables import IDEMPOTENCY_TABLE_SUFFIX, SERIES_TABLE_SUFFIX, WORKERS_TABLE_SUFFIX
from tickets_deploy.config import load_config_file, parse_config, pick_region
from tickets_deploy.environment import handler_environment, region_settings
from tickets_deploy.ledger import LedgerError, check_config_file, ledger_path_beside
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
    """cdk.json's config as written (the server applies its ledger: layout_check.py), at `region`; or ConfigError."""
    config = load_config_file(config_path)
    return LocalDeployment(config, pick_region(config, region, config_path))


def ledger_refusal(config_path: str | Path) -> str | None:
    """Why synthesis would refuse cdk.json against the ledger beside it (None: no refusal, or no ledger), which the
    server warns of: it serves a config as written on its own tables, so that a change can be tried."""
    path = Path(config_path)
    if not ledger_path_beside(path).exists():
        return None
    try:
        check_config_file(path, load_config_file(path))
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
