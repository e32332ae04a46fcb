#!/usr/bin/env python3
"""The CDK app: one Tickets stack per region configured in cdk.json's `tickets` context, checked
against and recorded in the deployment ledger (tickets.lock.json beside cdk.json and this file)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import aws_cdk as cdk

from stacks.tickets_stack import TicketsStack, add_stacks
from tickets_deploy.config import ConfigError, parse_config
from tickets_deploy.ledger import (
    LEDGER_FILE,
    LedgerError,
    new_accounts,
    read_ledger_file,
    record_services,
    refusal,
    write_ledger_file,
)

LEDGER_PATH = Path(__file__).resolve().parent / LEDGER_FILE


def synthesize(app: cdk.App, ledger_path: Path, account: str | None = None) -> dict[str, TicketsStack]:
    """Check the config against the ledger, synthesise, then record the config in the ledger; returns
    the stacks by region. Nothing is written unless synthesis succeeded, and the ledger only when it changed."""
    config = parse_config(app.node.try_get_context("tickets"))
    previous = read_ledger_file(ledger_path)
    ledger = record_services(previous, {config.table_name: config}, account)
    stacks = add_stacks(app, config, account=account, ledger_version=ledger.version)
    app.synth()
    if ledger is previous:
        return stacks
    write_ledger_file(ledger_path, ledger)
    print(
        f"{ledger_path}: recorded version {ledger.version} ({ledger.versions[-1].change}); commit it with cdk.json.",
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
    return stacks


def main(app: cdk.App | None = None, ledger_path: Path = LEDGER_PATH) -> None:
    try:
        synthesize(app or cdk.App(), ledger_path, account=os.environ.get("CDK_DEFAULT_ACCOUNT"))
    except ConfigError as err:
        sys.exit(f"cdk.json: invalid tickets config: {err}")
    except LedgerError as err:
        sys.exit(refusal(ledger_path, err, "synthesised or written"))


if __name__ == "__main__":
    main()
