"""python -m tickets_cdk init: start the deployment ledger of the CDK app in this directory."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tickets import __version__
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import (
    LEDGER_FILE,
    LedgerError,
    init_ledger_file,
    ledger_path_beside,
    one_way_choices,
    read_ledger_file,
    refuse_existing_ledger,
)
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import DeploymentConfig

from .ledger_check import DECLARE_ENV, LEDGER_PATH_CONTEXT

APP_TIMEOUT_SECONDS = 600


class InitError(Exception):
    """Why no ledger was written, and what to do."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tickets_cdk",
        description=f"Run the CDK app of DIR's cdk.json once, write its TicketServices' first ledger ({LEDGER_FILE}) "
        "beside cdk.json before the first deploy; commit it with cdk.json. A deployed ledger is never replaced.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("command", choices=["init"], help="init: write the first ledger")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="the app's directory (default: here)")
    parser.add_argument("--app", help="the command that runs the app (default: cdk.json's `app`)")
    parser.add_argument("--force", action="store_true", help="replace a ledger that records no deployment")
    args = parser.parse_args(argv)
    try:
        path, configs = init(args.dir, args.app, args.force)
    except (InitError, ConfigError, LedgerError) as err:
        print(f"init: {err}", file=sys.stderr)
        return 2
    for name, config in configs.items():
        served = "unconfigured keys served" if not config.strict_keys else "strictKeys on"
        regions = ", ".join(f"{region} (slot {slot})" for region, slot in config.regions.items())
        counters = len(config.counters)
        print(f"{name}: regionSlots {config.region_slots}, regions {regions}, {counters} counter(s), {served}")
    print(f"{path}: wrote the ledger of {len(configs)} service(s). Commit it with cdk.json.")
    for said in one_way_choices(None, read_ledger_file(path)):
        print(f"one-way: {said}")
    return 0


def init(directory: Path, app_command: str | None, force: bool) -> tuple[Path, dict[str, DeploymentConfig]]:
    """Run the app in `directory` to learn its services and write their first ledger: its path, the configs by table."""
    cdk_json = directory.resolve() / "cdk.json"
    try:
        document = json.loads(cdk_json.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InitError(
            f"{cdk_json}: not found; run init in the directory of the app's cdk.json (or pass --dir)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InitError(f"{cdk_json}: cannot read it ({err})") from None
    context = dict(document.get("context") or {})
    local_context = cdk_json.with_name("cdk.context.json")  # the CLI adds it to cdk.json's context
    if local_context.is_file():
        context = {**context, **json.loads(local_context.read_text(encoding="utf-8"))}
    explicit = context.get(LEDGER_PATH_CONTEXT)
    path = (cdk_json.parent / explicit).resolve() if explicit else ledger_path_beside(cdk_json)
    refuse_existing_ledger(path, replace_undeployed=force)  # before running the app
    command = app_command or document.get("app")
    if not command:
        raise InitError(f'{cdk_json}: no "app" command to run (or pass --app "python3 app.py")')
    with tempfile.TemporaryDirectory(prefix="tickets-init-") as scratch:
        declared = Path(scratch) / "declared.json"
        environment = {
            **os.environ,
            DECLARE_ENV: str(declared),
            "CDK_CONTEXT_JSON": json.dumps(context),
            "CDK_OUTDIR": str(Path(scratch) / "cdk.out"),
        }
        try:
            ran = subprocess.run(
                command,
                shell=True,  # as the CDK CLI runs it
                cwd=cdk_json.parent,
                env=environment,
                capture_output=True,
                text=True,
                timeout=APP_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise InitError(f"the app ({command}) ran for over {APP_TIMEOUT_SECONDS} s; nothing was written") from None
        if ran.returncode != 0 or not declared.exists():
            said = (ran.stderr.strip() or ran.stdout.strip())[-3000:]
            why = f"exited with {ran.returncode}" if ran.returncode else "declared no TicketService"
            raise InitError(f"the app ({command}) {why}; nothing was written:\n{said}")
        raw = json.loads(declared.read_text(encoding="utf-8"))
    configs = {name: parse_config(config) for name, config in raw.items()}
    init_ledger_file(path, configs, replace_undeployed=force)  # the first synthesis records the account
    return path, configs


if __name__ == "__main__":
    sys.exit(main())
