"""cdk.json's `tickets` config: `parse_config` (cdk.json's object), `parse_props` (the construct's props, by
the same rules), `to_raw` and `props_of` (a config written back), `load_config_file` (cdk.json for the local
server and tickets_admin).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .field import Field, parse_fields
from .rules import (
    ConfigError,
    require_object,
)
from .schema import FIELDS, DeploymentConfig


def load_config_file(path: str | Path) -> DeploymentConfig:
    """Read a cdk.json and parse its `context.tickets`; ConfigError with a message a user can act on.
    JSON integers are read exactly, so a number the CDK CLI would round is refused here too."""
    path = Path(path)
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
        return parse_config((context or {}).get("tickets"))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def pick_region(config: DeploymentConfig, region: str | None, source: str | Path = "cdk.json") -> str:
    """`region`, or the first configured one when None; a region must be configured: its slot decides
    which tickets are its own."""
    if region is None:
        return next(iter(config.regions))
    if region not in config.regions:
        raise ConfigError(
            f"region {region!r} is not in {source} (configured: {', '.join(config.regions)}); "
            "its slot comes from tickets.regions"
        )
    return region


def parse_config(raw: Any) -> DeploymentConfig:
    """cdk.json's `tickets` object, checked field by field (FIELDS)."""
    if raw is None:
        raise ConfigError('tickets: missing; add a "tickets" object to the context in cdk.json')
    require_object(raw, "tickets", {each.name for each in FIELDS})
    parsed = parse_fields(
        FIELDS, lambda each: raw.get(each.name, each.default), lambda each: f"tickets.{each.name}", {}
    )
    return DeploymentConfig(**parsed)


def parse_props(props: Mapping[str, Any], region: str, label: str) -> DeploymentConfig:
    """The construct's keyword props (FIELDS' `prop` names; None: the field's default) for the stack's
    `region`, checked by the same rules as cdk.json; ConfigError messages start with `label` and name the prop."""

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
    """`config` as the construct's props for its `region` (parse_props(props_of(c, r), r, ...) == c for a config
    of that one region): how the reference app gives cdk.json's config to TicketService."""
    return {
        each.prop: each.to_prop(getattr(config, each.attribute), region)
        for each in FIELDS
        if each.owner == "TicketService"
    }


def to_raw(config: DeploymentConfig) -> dict[str, Any]:
    """`config` as cdk.json's `tickets` object (parse_config(to_raw(c)) == c): big numbers as decimal strings."""
    return {
        each.name: each.encode(getattr(config, each.attribute))
        for each in FIELDS
        if getattr(config, each.attribute) is not None
    }
