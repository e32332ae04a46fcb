"""The `deployed` object of a service: each `recorded` field's deployed value (left out at its default), so that
`tickets_admin --service TABLE` builds the config from the ledger alone (`config_from_ledger`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickets_deploy.config import parse_config
from tickets_deploy.counter_fields import COUNTER_FIELDS
from tickets_deploy.field import Field
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import FIELDS, DeploymentConfig
from tickets_deploy.shapes import encode_number

from .model import Ledger, LedgerError

DEPLOYED_FIELDS = {each.name: each for each in FIELDS if each.recorded and not each.permanent}
DEPLOYED_COUNTER_FIELDS = {each.name: each for each in COUNTER_FIELDS if each.recorded and not each.permanent}


def deployed_settings(settings: Any, fields: Mapping[str, Field] = DEPLOYED_FIELDS) -> dict[str, Any]:
    found = {}
    for name, each in fields.items():
        value = getattr(settings, each.attribute)
        if name == "counters":
            value = {key: deployed_settings(counter, DEPLOYED_COUNTER_FIELDS) for key, counter in value.items()}
            value = {key: counter for key, counter in value.items() if counter} or each.default
        if value != each.default:
            found[name] = each.encode(value)
    return found


def check_deployed(raw: Any, counters: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The `deployed` object's names; its values are checked by their rules when a config is built from them."""
    if not isinstance(raw, dict) or set(raw) - set(DEPLOYED_FIELDS):
        raise ValueError(f"{where}: expected an object of {', '.join(sorted(DEPLOYED_FIELDS))}")
    recorded_counters = raw.get("counters", {})
    if not isinstance(recorded_counters, dict) or set(recorded_counters) - set(counters):
        raise ValueError(f"{where}.counters: expected an object of recorded counters")
    for key, settings in recorded_counters.items():
        if not isinstance(settings, dict) or not settings or set(settings) - set(DEPLOYED_COUNTER_FIELDS):
            raise ValueError(f"{where}.counters.{key}: expected an object of {', '.join(DEPLOYED_COUNTER_FIELDS)}")
    return raw


def config_from_ledger(service: Ledger, where: str) -> DeploymentConfig:
    if service.deployed is None:
        raise LedgerError(
            f"{where}: {service.table_name}: this ledger was written before it recorded the deployed settings: "
            "synthesise the app once (`cdk synth`) and commit the ledger, or give tickets_admin a cdk.json (--config)."
        )
    regions = {slot.region: number for number, slot in service.slots.items() if not slot.retired}
    if not regions:
        raise LedgerError(f"{where}: {service.table_name}: every region of this service is retired")
    deployed = dict(service.deployed)
    recorded_counters = deployed.pop("counters", {})
    raw = {
        **deployed,
        "tableName": service.table_name,
        "regionSlots": service.region_slots,
        "regions": regions,
        "counters": {
            key: {**{name: encode_number(n) for name, n in layout.to_json().items()}, **recorded_counters.get(key, {})}
            for key, layout in service.counters.items()
        },
        "series": {key: dict(series) for key, series in service.series.items()},
    }
    try:
        return parse_config(raw)
    except ConfigError as err:
        raise LedgerError(f"{where}: {service.table_name}: the ledger's settings are refused: {err}") from None
