"""What one local deployment is: cdk.json's `tickets` config, one of its regions, and the
handler environment the stack would give that region's function."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tickets.config import ConfigError, DeploymentConfig, handler_environment, parse_config


# Powertools outside Lambda: no X-Ray daemon to send traces to, no CloudWatch to read metrics.
POWERTOOLS_LOCAL = {"POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true"}


@dataclass(frozen=True)
class LocalDeployment:
    config: DeploymentConfig
    region: str

    @property
    def slot(self) -> int:
        return self.config.regions[self.region]

    @property
    def counter_table(self) -> str:
        return f"tickets-local-{self.region}"

    @property
    def idempotency_table(self) -> str:
        return f"{self.counter_table}-idempotency"

    @property
    def sample_path(self) -> str:
        """A path worth curling: the first configured counter, else the default key."""
        return "/" + next(iter(self.config.counters), "")

    def handler_environment(self, *, verbose: bool) -> dict[str, str]:
        """Exactly the stack's environment for this region, plus what running outside Lambda needs."""
        return {
            **handler_environment(self.config, self.region, counter_table=self.counter_table,
                                  idempotency_table=self.idempotency_table),
            **POWERTOOLS_LOCAL,
            "POWERTOOLS_LOG_LEVEL": "INFO" if verbose else "WARNING",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }


def load_deployment(config_path: str | Path, region: str | None) -> LocalDeployment:
    """Read cdk.json and pick the region; ConfigError with a message a user can act on."""
    path = Path(config_path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found; run from the repository root or pass --config PATH") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read it ({err})") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: not valid JSON ({err})") from None
    context = document.get("context") if isinstance(document, dict) else None
    try:
        config = parse_config((context or {}).get("tickets"))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    if region is None:
        region = next(iter(config.regions))
    elif region not in config.regions:
        raise ConfigError(f"region {region!r} is not in {path} (configured: {', '.join(config.regions)}); "
                          "its slot comes from tickets.regions")
    return LocalDeployment(config, region)
