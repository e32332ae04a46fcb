"""The Lambda code asset as the construct builds it (tickets_cdk.asset: the `tickets` package minus
`__pycache__` and `*.pyc`), zipped with deflate."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

from tickets_cdk.asset import asset_files

BASELINE_SOURCE = Path(__file__).with_name("baseline.py")
BASELINE_ASSET_NAME = "baseline.py"  # one file; its handler is baseline.lambda_handler


def zipped_bytes(files: dict[str, Path]) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, path in files.items():
            archive.write(path, name)
    return len(buffer.getvalue())


def measure() -> dict[str, int]:
    tickets = asset_files()
    return {
        "package_bytes": zipped_bytes(tickets),
        "package_files": len(tickets),
        "baseline_package_bytes": zipped_bytes({BASELINE_ASSET_NAME: BASELINE_SOURCE}),
    }


def build_task_root(destination: Path) -> Path:
    """Both assets side by side in one directory, without bytecode: what /var/task holds."""
    for name, path in {**asset_files(), BASELINE_ASSET_NAME: BASELINE_SOURCE}.items():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return destination
