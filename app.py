#!/usr/bin/env python3
"""The CDK app: one Tickets stack per region configured in cdk.json's `tickets` context."""

import os
import sys

import aws_cdk as cdk

from stacks.tickets_stack import add_stacks
from tickets.config import ConfigError, parse_config


def main() -> None:
    app = cdk.App()
    try:
        config = parse_config(app.node.try_get_context("tickets"))
    except ConfigError as err:
        sys.exit(f"cdk.json: invalid tickets config: {err}")
    add_stacks(app, config, account=os.environ.get("CDK_DEFAULT_ACCOUNT"))
    app.synth()


if __name__ == "__main__":
    main()
