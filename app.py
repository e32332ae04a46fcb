#!/usr/bin/env python3
"""The CDK app: one Tickets stack per region configured in cdk.json's `tickets` context, checked
against and recorded in the deployment ledger (tickets.lock.json beside cdk.json)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import aws_cdk as cdk

from stacks.ledger import LedgerError, default_ledger_path, read_ledger, record, write_ledger
from stacks.tickets_stack import TicketsStack, add_stacks
from tickets_deploy.config import ConfigError, parse_config


def synthesize(app: cdk.App, ledger_path: Path) -> dict[str, TicketsStack]:
    """Check the config against the ledger, synthesise, then record the config in the ledger; returns
    the stacks by region. Nothing is written unless synthesis succeeded, and the ledger only when it changed."""
    config = parse_config(app.node.try_get_context("tickets"))
    previous = read_ledger(ledger_path)
    ledger = record(config, previous)
    stacks = add_stacks(app, config, account=os.environ.get("CDK_DEFAULT_ACCOUNT"))
    app.synth()
    if ledger == previous:
        return stacks
    write_ledger(ledger_path, ledger)
    if previous is None:
        print(
            f"{ledger_path}: no ledger was found, so this is a new deployment: wrote one; commit it with "
            "cdk.json. If this app was deployed before by a version without a ledger, stop: set tableName "
            "to the deployed counter table's name first (README: Operations).",
            file=sys.stderr,
        )
    else:
        print(
            f"{ledger_path}: recorded the new counters, regions or retired slots; commit it with cdk.json.",
            file=sys.stderr,
        )
    return stacks


def main(app: cdk.App | None = None, ledger_path: Path | None = None) -> None:
    path = ledger_path or default_ledger_path()
    try:
        synthesize(app or cdk.App(), path)
    except ConfigError as err:
        sys.exit(f"cdk.json: invalid tickets config: {err}")
    except LedgerError as err:
        sys.exit(f"cdk.json: refused by the deployment ledger {path} (nothing was synthesised or written):\n{err}")


if __name__ == "__main__":
    main()
