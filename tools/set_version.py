"""Set the release version everywhere it is written: `make version VERSION=X.Y.Z` (docs/how-to/release.md): files
read where `tickets.__version__` is not (tests/packaging/test_client_packaging.py fails whenever they differ)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-[0-9A-Za-z.-]+)?")
# Each place: the file, and the pattern whose one group is the version
PLACES = (
    ("lambda_src/tickets/__init__.py", r'^__version__ = "([^"]+)"$'),
    ("clients/python/tickets_client/version.py", r'^__version__ = "([^"]+)"$'),
    ("clients/typescript/package.json", r'^  "version": "([^"]+)",$'),
    ("clients/typescript/package-lock.json", r'^  "name": "tickets-client",\n  "version": "([^"]+)",$'),
    ("clients/typescript/package-lock.json", r'^      "name": "tickets-client",\n      "version": "([^"]+)",$'),
    ("clients/typescript/src/client.ts", r'^export const USER_AGENT = "tickets-client-ts/([^"]+)";'),
)


def set_version(version: str, root: Path = ROOT) -> list[Path]:
    """Write `version` into every place; ValueError, before any write, if it is not semantic or a line is gone."""
    if not SEMVER.fullmatch(version):
        raise ValueError(f"{version!r} is not a semantic version (X.Y.Z, optionally -pre)")
    edits: dict[Path, str] = {}
    for name, pattern in PLACES:
        path = root / name
        text = edits.get(path) or path.read_text()
        line = re.compile(pattern, re.MULTILINE)
        if len(line.findall(text)) != 1:
            raise ValueError(f"{name}: expected one line matching {pattern}; fix it by hand first")
        edits[path] = line.sub(lambda match: match.group(0).replace(match.group(1), version), text)
    for path, text in edits.items():
        path.write_text(text)
    return list(edits)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: make version VERSION=X.Y.Z", file=sys.stderr)
        return 2
    try:
        written = set_version(argv[0])
    except ValueError as err:
        sys.exit(f"set_version: {err}")
    for path in written:
        print(f"{path.relative_to(ROOT)}: {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
