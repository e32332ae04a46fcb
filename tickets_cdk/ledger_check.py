"""The deployment ledger, enforced by the construct itself: any app that contains a TicketService is checked
against its ledger (tickets.lock.json beside the app's cdk.json) when it synthesises.

The ledger is per app: the first TicketService adds one `TicketsLedgerCheck` construct to the app's root,
which every later one registers with. Its validation runs in the CDK's validation phase (before any
template is written): it gathers every service of every stack, by table name (one service deployed in
several regions, one stack each, shares a name and an entry, with a slot per region), checks them with
tickets_deploy.ledger.record_services (the rollout rule included). A refusal, or no ledger at all, stops
synthesis with the reason. Each stack with a service outputs `TicketsLedgerVersion`, the ledger version it
was synthesised with: a Lazy value, resolved as synthesis writes the templates, after the whole app passed
validation; only then, and only if something changed, is the ledger written.

`python -m tickets_cdk init` runs the app with DECLARE_ENV naming a file: the check then writes what the
app declares there (cdk.json's shape, by table name) instead of reading the ledger.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import CfnOutput, IStringProducer, Lazy, Stack, Token
from constructs import Construct, IValidation

from tickets_deploy.config import DeploymentConfig, to_raw
from tickets_deploy.ledger import (
    LEDGER_FILE,
    LEDGER_VERSION_OUTPUT,
    LedgerError,
    LedgerFile,
    ledger_path_beside,
    new_accounts,
    read_ledger_file,
    record_services,
    write_ledger_file,
)

if TYPE_CHECKING:
    from .service import TicketService

CHECK_ID = "TicketsLedgerCheck"  # the one check construct, a child of the app's root
VERSION_OUTPUT = LEDGER_VERSION_OUTPUT  # the output every stack with a service carries
LEDGER_PATH_CONTEXT = "tickets:ledgerPath"  # context naming the ledger explicitly (cdk synth -c tickets:ledgerPath=…)
DECLARE_ENV = "TICKETS_CDK_DECLARE"  # set by `python -m tickets_cdk init`: the file to declare the services in
INIT_COMMAND = "python -m tickets_cdk init"


@dataclass(frozen=True)
class _Registered:
    service: TicketService
    stack: Stack
    account: str | None  # the stack's account, else the CLI's default account, else unknown
    table_ids: tuple[str, str]  # the tables' logical ids in the stack


class TicketsLedgerCheck(Construct):
    """The app's one ledger check (see the module's docstring); found with `TicketsLedgerCheck.of(scope)`."""

    def __init__(self, root: Construct):
        super().__init__(root, CHECK_ID)
        self.registered: list[_Registered] = []
        self.version: str | None = None  # the ledger version the app was synthesised with, once checked
        self.ledger_path: Path | None = None
        self.problem: str | None = None  # why the ledger refused the app, once it did
        self.unwritten: tuple[Path, LedgerFile, LedgerFile] | None = None  # recorded, not yet written
        self.node.add_validation(_Validation(self))

    @classmethod
    def of(cls, scope: Construct) -> TicketsLedgerCheck:
        root = scope.node.root
        found = root.node.try_find_child(CHECK_ID)
        if found is None:
            return cls(cast(Construct, root))
        if not isinstance(found, TicketsLedgerCheck):
            raise ValueError(f"{CHECK_ID}: the app's root has a construct of that id that is not Tickets' ledger check")
        return found

    def validate(self) -> list[str]:
        try:
            configs = self.declared()
        except ValueError as err:
            return [str(err)]
        declare_to = os.environ.get(DECLARE_ENV)
        if declare_to:
            Path(declare_to).write_text(
                json.dumps({name: to_raw(config) for name, config in configs.items()}, indent=2), encoding="utf-8"
            )
            self.version = "declared"
            return []
        try:
            path = self.ledger_path = find_ledger(self)
            previous = read_ledger_file(path)
            ledger = previous
            for account, group in _by_account(self.registered, configs).items():
                ledger = record_services(ledger, group, account)
        except LedgerError as err:
            self.problem = str(err)
            if self.ledger_path is not None and not self.ledger_path.exists():
                self.problem += f" In an app of your own, `{INIT_COMMAND}` in the directory of its cdk.json writes it."
            where = self.ledger_path or LEDGER_FILE
            return [f"refused by the deployment ledger {where} (nothing was synthesised or written):\n{self.problem}"]
        self.version = ledger.version
        # Written once the whole app passed validation, when synthesis writes the templates (the first
        # TicketsLedgerVersion output it resolves): a refusal anywhere in the app leaves the ledger as it was.
        self.unwritten = (path, previous, ledger) if ledger is not previous else None
        return []

    def write_recorded(self) -> None:
        """Write what validation recorded, once; say what is new."""
        if self.unwritten is not None:
            path, previous, ledger = self.unwritten
            self.unwritten = None
            write_ledger_file(path, ledger)
            _say_what_was_recorded(path, previous, ledger)

    def declared(self) -> dict[str, DeploymentConfig]:
        """Every service of the app, by table name, its regions gathered from its stacks; ValueError when
        services sharing a table name disagree on what the ledger records."""
        configs: dict[str, DeploymentConfig] = {}
        first: dict[str, TicketService] = {}
        for entry in self.registered:
            config, name = entry.service.config, entry.service.config.table_name
            if name not in configs:
                configs[name], first[name] = config, entry.service
                continue
            merged = configs[name]
            for field in ("region_slots", "strict_keys", "default_key", "counters", "series"):
                if getattr(merged, field) != getattr(config, field):
                    raise ValueError(
                        f"{entry.service.node.path} and {first[name].node.path} share the table name {name!r}, "
                        f"so they are one service deployed in two regions, but their {field} differ. One service "
                        "has one numbering in every region: give both the same settings, or give one another "
                        "table_name (a service of its own)."
                    )
            regions = dict(merged.regions)
            for region, slot in config.regions.items():
                owner = next((other for other, taken in regions.items() if taken == slot and other != region), None)
                if owner is not None:
                    raise ValueError(
                        f"{entry.service.node.path}: region_slot {slot} is already {owner}'s (service {name!r}, "
                        f"{first[name].node.path}); two regions sharing a slot would issue the same tickets"
                    )
                regions[region] = slot
            configs[name] = replace(merged, regions=regions)
        return configs


@jsii.implements(IValidation)
class _Validation:
    def __init__(self, check: TicketsLedgerCheck):
        self.check = check

    def validate(self) -> list[str]:
        return self.check.validate()


@jsii.implements(IStringProducer)
class _LedgerVersion:
    def __init__(self, check: TicketsLedgerCheck):
        self.check = check

    def produce(self, context: Any) -> str:
        self.check.write_recorded()
        return self.check.version or "unrecorded"


def register(service: TicketService, table_ids: tuple[str, str]) -> None:
    """Add `service` to its app's ledger check, refusing at once what could never deploy or what the ledger
    could never accept: tables' logical ids taken in the stack; two services of one table name, or of one
    metrics service name, in one region and account."""
    check = TicketsLedgerCheck.of(service)
    stack = Stack.of(service)
    account = stack.account if not Token.is_unresolved(stack.account) else os.environ.get("CDK_DEFAULT_ACCOUNT")
    for other in check.registered:
        taken = set(table_ids) & set(other.table_ids) if other.stack is stack else set()
        if taken:
            raise ValueError(
                f"TicketService {service.node.path}: the logical id(s) {', '.join(sorted(taken))} are taken by "
                f"{other.service.node.path} in the same stack; give the construct another id, or table_logical_ids"
            )
        if (other.service.region, other.account) != (service.region, account):
            continue
        same = [
            what
            for what, mine, theirs in (
                ("table name", service.config.table_name, other.service.config.table_name),
                ("service name (metrics)", service.service_name, other.service.service_name),
            )
            if mine == theirs
        ]
        if same:
            raise ValueError(
                f"TicketService {service.node.path}: {other.service.node.path} in the same region "
                f"({service.region}) has the same {' and '.join(same)}. Two services in one region need their "
                "own table_name (the ledger knows a service by it; one table would mix two numberings) and their "
                "own service_name (their metrics would mix)."
            )
    check.registered.append(_Registered(service, stack, account, table_ids))
    if stack.node.try_find_child(VERSION_OUTPUT) is None:
        CfnOutput(
            stack,
            VERSION_OUTPUT,
            value=Lazy.uncached_string(_LedgerVersion(check)),
            description=f"The {LEDGER_FILE} version this stack was synthesised with (make deploy checks it)",
        )


def find_ledger(scope: Construct) -> Path:
    """The ledger beside the app's cdk.json: the context tickets:ledgerPath if set; else beside the cdk.json
    in or above the app script's directory (wherever synthesis runs from); else in or above the working
    directory (the CDK CLI runs the app where cdk.json is; `python -c`, or a test runner installed in a
    virtual environment, has no script of the app's)."""
    explicit = scope.node.try_get_context(LEDGER_PATH_CONTEXT)
    if explicit:
        return Path(str(explicit)).resolve()
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    starts = []
    if script and not _installed(Path(script).resolve()):
        starts.append(Path(script).resolve().parent)
    starts.append(Path.cwd())
    for start in starts:
        for directory in (start, *start.parents):
            if (directory / "cdk.json").is_file():
                return ledger_path_beside(directory / "cdk.json")
    raise LedgerError(
        f"no cdk.json in or above {' or '.join(str(start) for start in starts)}: the ledger ({LEDGER_FILE}) lives "
        "beside the app's cdk.json. Synthesise from the app's directory, or name it: "
        f"cdk synth -c {LEDGER_PATH_CONTEXT}=PATH"
    )


def _installed(path: Path) -> bool:
    """Is `path` part of a Python installation (a tool's entry point such as pytest), not an app?"""
    return any(path.is_relative_to(Path(prefix).resolve()) for prefix in {sys.prefix, sys.base_prefix})


def _by_account(
    registered: list[_Registered], configs: Mapping[str, DeploymentConfig]
) -> dict[str | None, dict[str, DeploymentConfig]]:
    """The services as deployed to each account (an app may hold staging and production): the regions of
    each service that the account's stacks hold. One account, the usual case: all of them."""
    accounts = {entry.account for entry in registered}
    if len(accounts) == 1:
        return {accounts.pop(): dict(configs)}
    grouped: dict[str | None, dict[str, DeploymentConfig]] = {}
    for entry in registered:
        name = entry.service.config.table_name
        group = grouped.setdefault(entry.account, {})
        regions = dict(group[name].regions) if name in group else {}
        regions[entry.service.region] = entry.service.region_slot
        group[name] = replace(configs[name], regions=regions)
    return dict(sorted(grouped.items(), key=lambda item: item[0] or ""))


def _say_what_was_recorded(path: Path, previous: LedgerFile, ledger: LedgerFile) -> None:
    print(
        f"{path}: recorded version {ledger.version} ({ledger.versions[-1].change}); commit it with cdk.json.",
        file=sys.stderr,
    )
    for region, new_account in new_accounts(previous, ledger):
        print(
            f"{region}: account {new_account} is new to the ledger, so its tables start empty and every counter "
            "starts at its start there. That is right for a deployment of its own (staging beside production). "
            "If it replaces a deployment in another account, run `python -m tickets_admin export` against the "
            "old tables and `python -m tickets_admin raise KEY --above N` here for every key before callers "
            "switch (docs/operations.md#moving-to-another-account).",
            file=sys.stderr,
        )
