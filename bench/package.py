"""The Lambda code asset as the construct builds it (tickets_cdk.asset), zipped with deflate, and beside the
baseline's one file in a task root: what the cold start imports."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from tickets_cdk.asset import asset_contents, write_asset

BASELINE = Path(__file__).with_name("baseline.py")  # one file; its handler is baseline.lambda_handler


def zipped_bytes(files: dict[str, bytes]) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return len(buffer.getvalue())


def measure() -> dict[str, int]:
    tickets = asset_contents()
    return {
        "package_bytes": zipped_bytes(tickets),
        "package_files": len(tickets),
        "baseline_package_bytes": zipped_bytes({BASELINE.name: BASELINE.read_bytes()}),
    }


def build_task_root(destination: Path) -> Path:
    """Both assets side by side in one directory, without bytecode: what /var/task holds."""
    write_asset(destination)
    (destination / BASELINE.name).write_bytes(BASELINE.read_bytes())
    return destination
