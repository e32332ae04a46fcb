"""python -m tickets_deploy init: an alias of the one init for an app whose services are cdk.json's `tickets`
(the reference app), without running the app: the same init_ledger_file as `python -m tickets_cdk init` (which
`make init` runs and every message names), given cdk.json's config instead of what the app declares.
python -m tickets_deploy predeploy: what `make deploy` checks in AWS before CloudFormation starts (predeploy.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tickets_deploy.config import ConfigError, load_config_file
from tickets_deploy.ledger import LEDGER_FILE, LedgerError, init_ledger, ledger_path_beside


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["predeploy"]:
        from tickets_deploy import predeploy

        return predeploy.main(arguments[1:])
    return init(arguments)


def init(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tickets_deploy",
        description=f"Start a deployment: write its ledger ({LEDGER_FILE}, beside cdk.json) for the current "
        "cdk.json. Run once, before the first deploy, then commit the ledger with cdk.json; synthesis refuses "
        "to run without it and keeps it from then on. It never replaces a ledger that exists.",
    )
    parser.add_argument("command", choices=["init"], help="init: write the first ledger")
    parser.add_argument(
        "--config", type=Path, default=Path("cdk.json"), help="the cdk.json to read (default: the one here)"
    )
    args = parser.parse_args(argv)
    path = ledger_path_beside(args.config)
    try:
        ledger = init_ledger(path, load_config_file(args.config))
    except (ConfigError, LedgerError) as err:
        print(f"init: {err}", file=sys.stderr)
        return 2
    served = (
        "keys nobody configured are served (strictKeys false), so a counter added later must keep their layout"
        if ledger.unconfigured_keys_served
        else "strictKeys is on, so counters added later may have any layout"
    )
    print(
        f"{path}: wrote the ledger for regionSlots {ledger.region_slots}, {len(ledger.slots)} region(s) and "
        f"{len(ledger.counters)} counter(s); {served} (docs/design.md#the-rollout-rule). Commit it with cdk.json."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
