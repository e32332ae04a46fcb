"""The Lambda code asset: the `tickets` package Python imports (site-packages, or lambda_src/ in a clone) without
bytecode, under `tickets/`: the same package gives the same asset hash on every machine."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import tickets

HANDLER = "tickets.handler.lambda_handler"
PACKAGE = Path(tickets.__file__).resolve().parent


def asset_contents(package: Path = PACKAGE) -> dict[str, bytes]:
    """Archive name (`tickets/...`) -> bytes, for every file of the package but its bytecode."""
    return {
        f"{package.name}/{path.relative_to(package).as_posix()}": path.read_bytes()
        for path in sorted(package.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    }


def write_asset(destination: Path, package: Path = PACKAGE) -> Path:
    for name, content in asset_contents(package).items():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return destination


@functools.cache
def asset_directory() -> str:
    root = Path(tempfile.mkdtemp(prefix="tickets-asset-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return str(write_asset(root))
