"""The repository's own files as they lie on disk, without what tools make beside them (.venv*, node_modules,
.tools, cdk.out, build, dist, caches): what the checks that read the source (tests/unit/test_house.py,
test_docs_names.py) read. Plain standard library, nothing run: every tier may use it."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Folders .gitignore leaves out (made by make, npm, pip, the tools), skipped wherever they are; and every .venv*.
SKIPPED_DIRECTORIES = {".git", "node_modules", ".tools", "cdk.out", "dist", "build", "__pycache__", ".hypothesis"}
SKIPPED_DIRECTORIES |= {".pytest_cache", ".mypy_cache", ".ruff_cache", "out"}


def _skipped(name: str) -> bool:
    return name in SKIPPED_DIRECTORIES or name.startswith(".venv") or name.endswith(".egg-info")


def repository_files() -> list[Path]:
    """Every file of the repository, sorted, compiled Python left out."""
    found = []
    for directory, subdirectories, files in os.walk(REPO):
        subdirectories[:] = [name for name in subdirectories if not _skipped(name)]
        found += [Path(directory) / name for name in files if not name.endswith(".pyc")]
    return sorted(found)


def python_files() -> list[Path]:
    return [path for path in repository_files() if path.suffix == ".py"]
