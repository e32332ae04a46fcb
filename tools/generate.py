"""`make generated`: the files written from the code (tickets_deploy/generated.py, tickets_local/openapi.py), written
again; a test names this command when one differs."""

from __future__ import annotations

from pathlib import Path

from tickets.settings import Settings
from tickets_deploy.generated import configuration_table, props_module, with_configuration_table
from tickets_local.openapi import render

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "reference" / "configuration.md"


def main() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    written = {
        CONFIGURATION: with_configuration_table(page, configuration_table()).encode(),
        ROOT / "tickets_cdk" / "props.py": props_module().encode(),
        ROOT / "openapi.json": render(Settings()),
    }
    for path, content in written.items():
        if path.read_bytes() != content:
            path.write_bytes(content)
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
