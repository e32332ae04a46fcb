"""The services an app declares, each TicketService construct one region of a service (known by its table name):
the construct's rules in plain Python (tickets_cdk.ledger_check hands the constructs here), tested without the CDK."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .field import snake
from .schema import FIELDS, DeploymentConfig

ONE_NUMBERING = tuple(each.attribute for each in FIELDS if each.one_numbering)


@dataclass(frozen=True)
class DeclaredService:
    """One TicketService construct: its path in the app, its config (its own region only), where it is deployed."""

    path: str
    config: DeploymentConfig
    region: str
    account: str | None  # the stack's account, else the CLI's default account, else unknown
    service_name: str  # the `service` dimension of its metrics
    stack: str  # the enclosing stack's path: logical ids are unique per stack
    table_ids: tuple[str, str]  # the tables' logical ids in the stack


def refuse_clash(service: DeclaredService, registered: Sequence[DeclaredService]) -> None:
    """ValueError when `service` could never deploy beside those registered before it."""
    for other in registered:
        taken = set(service.table_ids) & set(other.table_ids) if other.stack == service.stack else set()
        if taken:
            raise ValueError(
                f"TicketService {service.path}: the logical id(s) {', '.join(sorted(taken))} are taken by "
                f"{other.path} in the same stack; give the construct another id, or table_logical_ids"
            )
        if (other.region, other.account) != (service.region, service.account):
            continue
        same = [
            what
            for what, mine, theirs in (
                ("table name", service.config.table_name, other.config.table_name),
                ("service name (metrics)", service.service_name, other.service_name),
            )
            if mine == theirs
        ]
        if same:
            raise ValueError(
                f"TicketService {service.path}: {other.path} in the same region ({service.region}) has the same "
                f"{' and '.join(same)}. Two services in one region need their own table_name and service_name."
            )


def declared(registered: Sequence[DeclaredService]) -> dict[str, DeploymentConfig]:
    """Every service of the app, by table name, its regions gathered from its constructs."""
    configs: dict[str, DeploymentConfig] = {}
    first: dict[str, DeclaredService] = {}
    for entry in registered:
        name = entry.config.table_name
        if name not in configs:
            configs[name], first[name] = entry.config, entry
            continue
        merged, regions = configs[name], dict(configs[name].regions)
        for attribute in ONE_NUMBERING:
            if getattr(merged, attribute) != getattr(entry.config, attribute):
                raise ValueError(
                    f"{entry.path} and {first[name].path} share the table name {name!r}, one service, but their "
                    f"{attribute} differ: give both the same settings, or one another table_name."
                )
        for region, slot in entry.config.regions.items():
            owner = next((other for other, taken in regions.items() if taken == slot and other != region), None)
            if owner is not None:
                raise ValueError(
                    f"{entry.path}: region_slot {slot} is already {owner}'s (service {name!r}, {first[name].path}); "
                    "two regions sharing a slot would issue the same tickets"
                )
            regions[region] = slot
        configs[name] = replace(merged, regions=regions)
    return configs


def by_account(
    registered: Sequence[DeclaredService], configs: Mapping[str, DeploymentConfig]
) -> dict[str | None, dict[str, DeploymentConfig]]:
    """The services as deployed to each account (an app may hold staging and production)."""
    grouped: dict[str | None, dict[str, DeploymentConfig]] = {}
    for entry in registered:
        name = entry.config.table_name
        group = grouped.setdefault(entry.account, {})
        regions = {**(group[name].regions if name in group else {}), entry.region: entry.config.regions[entry.region]}
        group[name] = replace(configs[name], regions=regions)
    return dict(sorted(grouped.items(), key=lambda item: item[0] or ""))


_FIELD_PATH = re.compile(r"(?P<field>[A-Za-z]+)(?:\.(?P<key>[^.:\s]+)(?:\.(?P<name>[A-Za-z]+))?)?: ")


def as_props(problems: str, registered: Sequence[DeclaredService]) -> str:
    """The ledger's refusal (lines `TABLE: FIELD: ...`) in the terms of an app that declared props, not cdk.json."""
    paths: dict[str, list[str]] = {}
    for entry in registered:
        paths.setdefault(entry.config.table_name, []).append(entry.path)
    lines = []
    for line in problems.splitlines():
        table, _, rest = line.partition(": ")
        field = _FIELD_PATH.match(rest)
        if table not in paths or field is None:
            lines.append(line)
            continue
        where = f"TicketService {', '.join(paths[table])}"
        lines.append(f"{where}, prop {_prop(field)}: {rest[field.end() :].replace('cdk.json', 'the app')}")
    return "\n".join(lines)


def _prop(field: re.Match[str]) -> str:
    """`counters.orders.maxBlock` as `counters['orders'].max_block`."""
    props = {each.name: each.prop for each in FIELDS}
    name, key, inner = field.group("field"), field.group("key"), field.group("name")
    if key is None or name == "regions":
        return props.get(name, name)
    return f"{props.get(name, name)}[{key!r}]" + (f".{snake(inner)}" if inner else "")
