"""The services an app declares, as the ledger sees them: each TicketService construct is one region of
a service (known by its table name). Plain Python: tickets_cdk.ledger_check gathers the constructs and
hands them here, so the rules (what may share a region, which settings are one service's in every
region, which regions each account holds) are tested without the CDK."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .schema import FIELDS, DeploymentConfig
from .shapes import snake

# The settings one service has in every region (one numbering): the schema's fields marked `one_numbering`.
ONE_NUMBERING = tuple(each.attribute for each in FIELDS if each.one_numbering)


@dataclass(frozen=True)
class DeclaredService:
    """One TicketService construct: its path, its config (its own region only), where it is deployed."""

    path: str  # the construct's path in the app
    config: DeploymentConfig
    region: str
    account: str | None  # the stack's account, else the CLI's default account, else unknown
    service_name: str  # the `service` dimension of its metrics
    stack: str  # the enclosing stack's path: logical ids are unique per stack
    table_ids: tuple[str, str]  # the tables' logical ids in the stack

    @property
    def region_slot(self) -> int:
        return self.config.regions[self.region]


def refuse_clash(service: DeclaredService, registered: Sequence[DeclaredService]) -> None:
    """ValueError when `service` could never deploy beside those registered before it: its tables' logical
    ids taken in its stack, or another service of its table name or metrics service name in its region
    and account."""
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
                f"{' and '.join(same)}. Two services in one region need their own table_name (the ledger knows a "
                "service by it; one table would mix two numberings) and their own service_name (their metrics "
                "would mix)."
            )


def declared(registered: Sequence[DeclaredService]) -> dict[str, DeploymentConfig]:
    """Every service of the app, by table name, its regions gathered from its constructs; ValueError when
    constructs sharing a table name disagree on a setting of the numbering (ONE_NUMBERING) or a slot."""
    configs: dict[str, DeploymentConfig] = {}
    first: dict[str, DeclaredService] = {}
    for entry in registered:
        name = entry.config.table_name
        if name not in configs:
            configs[name], first[name] = entry.config, entry
            continue
        _refuse_other_numbering(entry, first[name], configs[name])
        configs[name] = replace(configs[name], regions=_joined_regions(entry, first[name], configs[name]))
    return configs


def _refuse_other_numbering(entry: DeclaredService, first: DeclaredService, merged: DeploymentConfig) -> None:
    for attribute in ONE_NUMBERING:
        if getattr(merged, attribute) != getattr(entry.config, attribute):
            raise ValueError(
                f"{entry.path} and {first.path} share the table name {merged.table_name!r}, so they are one "
                f"service deployed in two regions, but their {attribute} differ. One service has one numbering "
                "in every region: give both the same settings, or give one another table_name (a service of its "
                "own)."
            )


def _joined_regions(entry: DeclaredService, first: DeclaredService, merged: DeploymentConfig) -> dict[str, int]:
    regions = dict(merged.regions)
    for region, slot in entry.config.regions.items():
        owner = next((other for other, taken in regions.items() if taken == slot and other != region), None)
        if owner is not None:
            raise ValueError(
                f"{entry.path}: region_slot {slot} is already {owner}'s (service {merged.table_name!r}, "
                f"{first.path}); two regions sharing a slot would issue the same tickets"
            )
        regions[region] = slot
    return regions


def by_account(
    registered: Sequence[DeclaredService], configs: Mapping[str, DeploymentConfig]
) -> dict[str | None, dict[str, DeploymentConfig]]:
    """The services as deployed to each account (an app may hold staging and production): the regions of
    each service that the account's stacks hold. One account, the usual case: all of them."""
    grouped: dict[str | None, dict[str, DeploymentConfig]] = {}
    for entry in registered:
        name = entry.config.table_name
        group = grouped.setdefault(entry.account, {})
        regions = dict(group[name].regions) if name in group else {}
        regions[entry.region] = entry.region_slot
        group[name] = replace(configs[name], regions=regions)
    return dict(sorted(grouped.items(), key=lambda item: item[0] or ""))


_FIELD_PATH = re.compile(r"(?P<field>[A-Za-z]+)(?:\.(?P<key>[^.:\s]+)(?:\.(?P<name>[A-Za-z]+))?)?: ")
_SAID = (("cdk.json says", "the app says"), ("cdk.json gives", "the app gives"), ("in cdk.json", "in the app"))


def as_props(problems: str, registered: Sequence[DeclaredService]) -> str:
    """The ledger's refusal (each line `TABLE: FIELD: ...`, in cdk.json's terms) for an app that declared its
    services with props rather than cdk.json: each line names the constructs of that table and the prop."""
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
        for old, new in _SAID:
            rest = rest.replace(old, new)
        where = f"TicketService {', '.join(paths[table])}"
        lines.append(f"{where}, prop {_prop(field)}: {rest[field.end() :].replace('cdk.json', 'the app')}")
    return "\n".join(lines)


def _prop(field: re.Match[str]) -> str:
    """cdk.json's field path (`counters.orders.maxBlock`) as the construct's prop (`counters['orders'].max_block`)."""
    props = {each.name: each.prop for each in FIELDS}
    name, key, inner = field.group("field"), field.group("key"), field.group("name")
    if key is None or name == "regions":
        return props.get(name, name)
    return f"{props.get(name, name)}[{key!r}]" + (f".{snake(inner)}" if inner else "")
