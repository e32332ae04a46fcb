"""`make generated`: the files written from the code, written again. Each is checked by a test that names this
command when the file differs: docs/reference/configuration.md's table of fields and tickets_cdk/props.py (from
the schema, tickets_deploy/generated.py) and openapi.json (from the route table and openapi_parts.json,
tickets_local/openapi.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from tickets.settings import Settings
from tickets_deploy.generated import configuration_table, props_module, with_configuration_table
from tickets_local.openapi import render

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "reference" / "configuration.md"


def main() -> int:
    written = {
        CONFIGURATION: with_configuration_table(
            CONFIGURATION.read_text(encoding="utf-8"), configuration_table()
        ).encode(),
        ROOT / "tickets_cdk" / "props.py": props_module().encode(),
        ROOT / "openapi.json": render(Settings()),  # the default config's document
    }
    for path, content in written.items():
        if path.read_bytes() != content:
            path.write_bytes(content)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
