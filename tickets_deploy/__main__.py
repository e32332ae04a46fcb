"""`predeploy` checks, before `cdk deploy`, the ledger version every region runs and the Powertools layer's SSM
parameter (python -m tickets_deploy predeploy --help); `upgrade-ledger [PATH]` rewrites an older ledger's format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tickets import __version__
from tickets_deploy.ledger import LEDGER_FILE, check_lineage, to_text, upgrade_text, write_ledger_file

ONE_INIT = (
    "init: a deployment's ledger is started by `python -m tickets_cdk init` in the directory of the app's cdk.json "
    "(`make init` runs it). Nothing was written."
)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["predeploy"]:
        from tickets_deploy import predeploy

        return predeploy.main(arguments[1:])
    if arguments[:1] == ["upgrade-ledger"]:
        upgrade = argparse.ArgumentParser(
            prog="python -m tickets_deploy upgrade-ledger", description="Rewrite an older ledger in the current format."
        )
        upgrade.add_argument("path", nargs="?", type=Path, default=Path(LEDGER_FILE), help=f"default: {LEDGER_FILE}")
        return upgrade_ledger(upgrade.parse_args(arguments[1:]).path)
    if arguments[:1] == ["init"]:
        print(ONE_INIT, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python -m tickets_deploy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("command", choices=["predeploy", "upgrade-ledger"])
    parser.parse_args(arguments)  # exits
    return 2


def upgrade_ledger(path: Path) -> int:
    try:
        text = path.read_text(encoding="utf-8")
        ledger = upgrade_text(text)
        check_lineage(ledger, str(path))
    except (OSError, ValueError, TypeError, KeyError) as err:
        print(f"upgrade-ledger: {path}: {err}", file=sys.stderr)
        return 2
    if to_text(ledger) == text:
        print(f"{path}: in the current format already; nothing written.")
        return 0
    write_ledger_file(path, ledger)
    print(f"{path}: rewritten in the current format, last version {ledger.version}. Commit it.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
