"""The deployment ledger, enforced by the construct itself: the app's one check validates every service before any
template is written; a stack's version output, resolved once all passed, writes it (docs/explanation/ledger.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import jsii
from aws_cdk import CfnOutput, Stack, Token
from constructs import Construct, IValidation

from tickets_deploy.config import to_raw
from tickets_deploy.ledger import (
    LEDGER_FILE,
    LEDGER_VERSION_OUTPUT,
    SYNTHESIS_REFUSED,
    LedgerError,
    LedgerFile,
    ledger_path_beside,
    new_accounts,
    one_way_choices,
    read_ledger_file,
    record_services,
    write_ledger_file,
)
from tickets_deploy.schema import DeploymentConfig
from tickets_deploy.services import DeclaredService, as_props, by_account, declared, refuse_clash

from .access_rules import lazy_string

CHECK_ID = "TicketsLedgerCheck"
LEDGER_PATH_CONTEXT = "tickets:ledgerPath"  # cdk synth -c tickets:ledgerPath=PATH
DECLARE_ENV = "TICKETS_CDK_DECLARE"  # python -m tickets_cdk init's: the check writes what the app declares there


@jsii.implements(IValidation)
class TicketsLedgerCheck(Construct):
    """The app's one ledger check: `TicketsLedgerCheck.of(scope)`."""

    def __init__(self, root: Construct):
        super().__init__(root, CHECK_ID)
        self.registered: list[DeclaredService] = []
        self.version: str | None = None  # synthesised with, once checked
        self.problem: str | None = None  # why the ledger refused the app
        self.unwritten: tuple[Path, LedgerFile, LedgerFile] | None = None  # path, previous, recorded
        self.node.add_validation(self)
        _say_refusals_once(self)

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
            configs = declared(self.registered)
        except ValueError as err:
            return [str(err)]
        declare_to = os.environ.get(DECLARE_ENV)
        if declare_to:
            raw = {name: to_raw(config) for name, config in configs.items()}
            Path(declare_to).write_text(json.dumps(raw, indent=2), encoding="utf-8")
            self.version = "declared"
            return []
        where: Path | str = LEDGER_FILE
        try:
            path = where = find_ledger(self)
            ledger = previous = read_ledger_file(path)
            for account, group in by_account(self.registered, configs).items():
                ledger = record_services(ledger, group, account, upgrade=True)
        except LedgerError as err:
            self.problem = str(err)
            if self.node.try_get_context("tickets") is None:  # declared with props, not from cdk.json's tickets
                self.problem = as_props(self.problem, self.registered)
            return [f"refused by the deployment ledger {where} ({SYNTHESIS_REFUSED}):\n{self.problem}"]
        self.version = ledger.version
        # Written by the first TicketsLedgerVersion output resolved: a refusal anywhere leaves the ledger as it was.
        self.unwritten = (path, previous, ledger) if ledger is not previous else None
        return []

    def written_version(self) -> str:
        """The version synthesised with, what validation recorded written first (saying what is new)."""
        if self.unwritten is not None:
            path, previous, ledger = self.unwritten
            self.unwritten = None
            write_ledger_file(path, ledger)
            said = [
                f"{path}: recorded version {ledger.version} ({ledger.versions[-1].change}); commit it with cdk.json."
            ]
            said += [f"one-way: {choice}" for choice in one_way_choices(previous, ledger)]
            said += [
                f"{region}: account {new_account} is new to the ledger, so its tables start empty. If it replaces "
                "a deployment in another account, run `.venv/bin/python -m tickets_admin export` on the old tables "
                "and `.venv/bin/python -m tickets_admin raise KEY --above N` here for every key "
                "(docs/how-to/deploy.md#moving-to-another-account)."
                for region, new_account in new_accounts(previous, ledger)
            ]
            print("\n".join(said), file=sys.stderr)
        return self.version or "unrecorded"


def register(scope: Construct, config: DeploymentConfig, service_name: str, table_ids: tuple[str, str]) -> None:
    """Add the service `scope` to its app's ledger check, refusing a clash at once (refuse_clash)."""
    check = TicketsLedgerCheck.of(scope)
    stack = Stack.of(scope)
    account = stack.account if not Token.is_unresolved(stack.account) else os.environ.get("CDK_DEFAULT_ACCOUNT")
    service = DeclaredService(scope.node.path, config, stack.region, account, service_name, stack.node.path, table_ids)
    refuse_clash(service, check.registered)
    check.registered.append(service)
    if stack.node.try_find_child(LEDGER_VERSION_OUTPUT) is None:
        CfnOutput(
            stack,
            LEDGER_VERSION_OUTPUT,
            value=lazy_string(check.written_version),
            description=f"The {LEDGER_FILE} version this stack was synthesised with (make deploy checks it)",
        )


def find_ledger(scope: Construct) -> Path:
    """The ledger: at the context LEDGER_PATH_CONTEXT, else beside the cdk.json in or above the app script's
    directory, else the working directory's (`python -c`, or an installed test runner, has no script of the app's)."""
    explicit = scope.node.try_get_context(LEDGER_PATH_CONTEXT)
    if explicit:
        return Path(str(explicit)).resolve()
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    starts = [Path.cwd()]
    if script and not any(
        Path(script).resolve().is_relative_to(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix}
    ):
        starts.insert(0, Path(script).resolve().parent)  # not a tool's entry point (pytest) installed with Python
    for start in starts:
        for directory in (start, *start.parents):
            if (directory / "cdk.json").is_file():
                return ledger_path_beside(directory / "cdk.json")
    raise LedgerError(
        f"no cdk.json in or above {' or '.join(str(start) for start in starts)}: the ledger ({LEDGER_FILE}) lives "
        "beside the app's cdk.json. Synthesise from the app's directory, or name it: "
        f"cdk synth -c {LEDGER_PATH_CONTEXT}=PATH"
    )


def _say_refusals_once(check: TicketsLedgerCheck) -> None:
    """A refusal an app does not catch, once, without jsii's traceback (the message twice, 40 lines); still exit 1."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, trace: Any) -> None:
        if check.problem is None or CHECK_ID not in str(error):
            previous(kind, error, trace)
            return
        print(str(error).replace("ValidationFailedWithErrors: ", "", 1), file=sys.stderr)

    sys.excepthook = hook
