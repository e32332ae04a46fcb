"""The Lambda code asset: the installed `tickets` package (the handler and its plain modules), nothing else.

The package is found where Python imports it from (site-packages after `pip install`, lambda_src/ in a
clone), copied without bytecode into a staging directory whose top level is `tickets/`, as Lambda
imports it (handler `tickets.handler.lambda_handler`). CDK hashes the staged files, so the directory's
own name never reaches a template.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import tickets

HANDLER = "tickets.handler.lambda_handler"
PACKAGE = Path(tickets.__file__).resolve().parent


def asset_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Archive name (`tickets/...`) -> file, for every file of the asset: the package minus bytecode."""
    return {
        f"{package.name}/{path.relative_to(package).as_posix()}": path
        for path in sorted(package.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    }


@functools.cache
def asset_directory() -> str:
    """A directory holding exactly asset_files(), made once per process and removed at its exit."""
    root = Path(tempfile.mkdtemp(prefix="tickets-asset-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for name, path in asset_files().items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return str(root)
