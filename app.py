#!/usr/bin/env python3
"""The reference CDK app, a user of tickets_cdk: one `Tickets-<region>` stack per region of cdk.json's `tickets`
context, checked against and recorded in the ledger beside it when it synthesises."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import aws_cdk as cdk

from stacks.tickets_stack import add_stacks
from tickets_cdk.ledger_check import LEDGER_PATH_CONTEXT, TicketsLedgerCheck
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LEDGER_FILE, SYNTHESIS_REFUSED, LedgerError, refusal
from tickets_deploy.rules import ConfigError

LEDGER_PATH = Path(__file__).resolve().parent / LEDGER_FILE


def synthesize(app: cdk.App, ledger_path: Path = LEDGER_PATH, account: str | None = None) -> dict[str, cdk.Stack]:
    """The stacks by region; LedgerError if the ledger at `ledger_path` refused (no template written, ledger kept)."""
    if app.node.try_get_context(LEDGER_PATH_CONTEXT) is None:
        app.node.set_context(LEDGER_PATH_CONTEXT, str(ledger_path))
    config = parse_config(app.node.try_get_context("tickets"))
    stacks = add_stacks(app, config, account=account)
    try:
        app.synth()
    except Exception:
        if (problem := TicketsLedgerCheck.of(app).problem) is not None:
            raise LedgerError(problem) from None
        raise
    return stacks


def main(app: cdk.App | None = None, ledger_path: Path = LEDGER_PATH) -> None:
    try:
        synthesize(app or cdk.App(), ledger_path, account=os.environ.get("CDK_DEFAULT_ACCOUNT"))
    except ConfigError as err:
        sys.exit(f"cdk.json: invalid tickets config: {err}")
    except LedgerError as err:
        sys.exit(refusal(ledger_path, err, SYNTHESIS_REFUSED))


if __name__ == "__main__":
    main()
