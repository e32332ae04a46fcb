"""Each region's handler environment: the stack and the local server both call `handler_environment`."""

from __future__ import annotations

from tickets import settings
from tickets.settings import OPAQUE_KEYS_ENV, Settings

from .config import pick_region
from .opaque_keys import has_opaque_counters, opaque_keys_parameter
from .rules import MAX_SETTINGS_BYTES, ConfigError
from .schema import FIELDS, DeploymentConfig


def region_settings(config: DeploymentConfig, region: str) -> Settings:
    carried = {each.attribute: getattr(config, each.attribute) for each in FIELDS if each.setting}
    return Settings(region_slot=config.regions[pick_region(config, region)], **carried)


# Powertools reads these at import; the alarms and dashboard use the same names.
SERVICE_NAME = "tickets"
METRICS_NAMESPACE = "Tickets"
POWERTOOLS_ENVIRONMENT = {"POWERTOOLS_SERVICE_NAME": SERVICE_NAME, "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE}


def handler_environment(
    config: DeploymentConfig,
    region: str,
    *,
    counter_table: str,
    idempotency_table: str,
    service_name: str = SERVICE_NAME,
    series_table: str | None = None,
    workers_table: str | None = None,
) -> dict[str, str]:
    """The function's environment for `region`: its settings, its tables and its metrics' `service` dimension."""
    encoded = region_settings(config, region).to_json()
    if len(encoded.encode()) > MAX_SETTINGS_BYTES:
        raise ConfigError(
            f"tickets.counters: {len(config.counters)} counters need {len(encoded)} bytes of "
            f"the function's environment, over the {MAX_SETTINGS_BYTES} it can spare; "
            "configure only keys that need a non-default start, stride, max or shards"
        )
    return {
        settings.SETTINGS_ENV: encoded,
        settings.COUNTER_TABLE_ENV: counter_table,
        settings.IDEMPOTENCY_TABLE_ENV: idempotency_table,
        **({settings.SERIES_TABLE_ENV: series_table} if config.series and series_table else {}),
        **({settings.WORKERS_TABLE_ENV: workers_table} if config.workers and workers_table else {}),
        # The keys' parameter's name: the keys are read at cold start, never put here.
        **({OPAQUE_KEYS_ENV: opaque_keys_parameter(config.table_name)} if has_opaque_counters(config) else {}),
        **POWERTOOLS_ENVIRONMENT,
        "POWERTOOLS_SERVICE_NAME": service_name,
    }
