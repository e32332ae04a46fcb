"""The Lambda code asset as the construct builds it (tickets_cdk.asset), zipped, and the task root the cold start
imports it from."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from tickets_cdk.asset import asset_contents, write_asset

BASELINE = Path(__file__).with_name("baseline.py")  # one file; its handler is baseline.lambda_handler


def measure() -> dict[str, int]:
    files = asset_contents()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return {"package_bytes": len(buffer.getvalue()), "package_files": len(files)}


def build_task_root(destination: Path) -> Path:
    """Both handlers' code side by side in one directory, without bytecode: what /var/task holds."""
    write_asset(destination)
    (destination / BASELINE.name).write_bytes(BASELINE.read_bytes())
    return destination
