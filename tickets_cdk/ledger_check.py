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
from pathlib import Path
from typing import Any, cast

import jsii
from aws_cdk import CfnOutput, IStringProducer, Lazy, Stack
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

CHECK_ID = "TicketsLedgerCheck"  # the one check construct, a child of the app's root
VERSION_OUTPUT = LEDGER_VERSION_OUTPUT  # the output every stack with a service carries
LEDGER_PATH_CONTEXT = "tickets:ledgerPath"  # context naming the ledger explicitly (cdk synth -c tickets:ledgerPath=…)
DECLARE_ENV = "TICKETS_CDK_DECLARE"  # set by `python -m tickets_cdk init`: the file to declare the services in


class TicketsLedgerCheck(Construct):
    """The app's one ledger check (see the module's docstring); found with `TicketsLedgerCheck.of(scope)`."""

    def __init__(self, root: Construct):
        super().__init__(root, CHECK_ID)
        self.registered: list[DeclaredService] = []
        self.version: str | None = None  # the ledger version the app was synthesised with, once checked
        self.ledger_path: Path | None = None
        self.problem: str | None = None  # why the ledger refused the app, once it did
        self.unwritten: tuple[Path, LedgerFile, LedgerFile] | None = None  # recorded, not yet written
        self.node.add_validation(_Validation(self))
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
            for account, group in by_account(self.registered, configs).items():
                ledger = record_services(ledger, group, account, upgrade=True)
        except LedgerError as err:
            self.problem = str(err)
            if self.node.try_get_context("tickets") is None:  # declared with props, not from cdk.json's tickets
                self.problem = as_props(self.problem, self.registered)
            where = self.ledger_path or LEDGER_FILE
            return [f"refused by the deployment ledger {where} ({SYNTHESIS_REFUSED}):\n{self.problem}"]
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
        """Every service of the app, by table name (tickets_deploy.services.declared)."""
        return declared(self.registered)


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


def register(scope: Construct, service: DeclaredService) -> None:
    """Add `service` (the construct `scope`) to its app's ledger check, refusing at once what could never
    deploy or what the ledger could never accept (tickets_deploy.services.refuse_clash)."""
    check = TicketsLedgerCheck.of(scope)
    stack = Stack.of(scope)
    refuse_clash(service, check.registered)
    check.registered.append(service)
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


def _say_refusals_once(check: TicketsLedgerCheck) -> None:
    """When the ledger refused the app, `app.synth()` raises the CDK's validation error through jsii, whose
    traceback (twice the message, 40 lines of kernel frames) buries the refusal: an app that does not catch
    it (`python app.py`, `cdk synth`) prints the validation errors once, without a traceback, and exits 1."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, trace: Any) -> None:
        if check.problem is None or CHECK_ID not in str(error):
            previous(kind, error, trace)
            return
        print(str(error).replace("ValidationFailedWithErrors: ", "", 1), file=sys.stderr)

    sys.excepthook = hook


def _say_what_was_recorded(path: Path, previous: LedgerFile, ledger: LedgerFile) -> None:
    print(
        f"{path}: recorded version {ledger.version} ({ledger.versions[-1].change}); commit it with cdk.json.",
        file=sys.stderr,
    )
    for said in one_way_choices(previous, ledger):
        print(f"one-way: {said}", file=sys.stderr)
    for region, new_account in new_accounts(previous, ledger):
        print(
            f"{region}: account {new_account} is new to the ledger, so its tables start empty and every counter "
            "starts at its start there. That is right for a deployment of its own (staging beside production). "
            "If it replaces a deployment in another account, run `.venv/bin/python -m tickets_admin export` against "
            "the old tables and `.venv/bin/python -m tickets_admin raise KEY --above N` here for every key before "
            "callers switch (docs/how-to/deploy.md#moving-to-another-account).",
            file=sys.stderr,
        )
