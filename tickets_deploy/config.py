"""cdk.json's `tickets` config parsed (from cdk.json, or the construct's props by the same rules) and written back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .field import Field, parse_fields
from .rules import ConfigError, require_object
from .schema import FIELDS, DeploymentConfig


def load_config_file(path: str | Path) -> DeploymentConfig:
    """A cdk.json's `context.tickets`; ConfigError with a message a user can act on."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found; run from the repository root or pass --config PATH") from None
    except (OSError, ValueError) as err:  # ValueError: not UTF-8, or not JSON
        raise ConfigError(f"{path}: unreadable, or not valid JSON ({err})") from None
    context = document.get("context") if isinstance(document, dict) else None
    try:
        return parse_config((context or {}).get("tickets"))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def pick_region(config: DeploymentConfig, region: str | None, source: str | Path = "cdk.json") -> str:
    """`region`, which must be configured (its slot decides its tickets), or the first one when None."""
    if region is None:
        return next(iter(config.regions))
    if region not in config.regions:
        raise ConfigError(
            f"region {region!r} is not in {source} (configured: {', '.join(config.regions)}); "
            "its slot comes from tickets.regions"
        )
    return region


def parse_config(raw: Any) -> DeploymentConfig:
    if raw is None:
        raise ConfigError('tickets: missing; add a "tickets" object to the context in cdk.json')
    require_object(raw, "tickets", {each.name for each in FIELDS})
    parsed = parse_fields(
        FIELDS, lambda each: raw.get(each.name, each.default), lambda each: f"tickets.{each.name}", {}
    )
    return DeploymentConfig(**parsed)


def parse_props(props: Mapping[str, Any], region: str, label: str) -> DeploymentConfig:
    """The construct's props (None: the field's default) for the stack's `region`; ConfigError starts with `label`."""

    def value_of(each: Field) -> Any:
        shaped = each.from_prop(props.get(each.prop) if each.owner == "TicketService" else None, region)
        return each.default if shaped is None else shaped

    known = sorted(each.prop for each in FIELDS if each.owner == "TicketService")
    unknown = sorted(set(props) - set(known))
    if unknown:
        raise ConfigError(f"{label}: {unknown[0]}: not a prop of TicketService (its props: {', '.join(known)})")
    try:
        parsed = parse_fields(FIELDS, value_of, lambda each: each.prop, {})
    except ConfigError as err:
        raise ConfigError(f"{label}: {err}") from None
    return DeploymentConfig(**parsed)


def props_of(config: DeploymentConfig, region: str) -> dict[str, Any]:
    """`config` as the construct's props for its `region`: parse_props' inverse for a config of that one region."""
    return {
        each.prop: each.to_prop(getattr(config, each.attribute), region)
        for each in FIELDS
        if each.owner == "TicketService"
    }


def to_raw(config: DeploymentConfig) -> dict[str, Any]:
    """parse_config's inverse."""
    return {
        each.name: each.encode(getattr(config, each.attribute))
        for each in FIELDS
        if getattr(config, each.attribute) is not None
    }
