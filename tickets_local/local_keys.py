"""The local server's keys of opaque ids (docs/reference/local-server.md): the key file given with --key-file (made
there when it does not exist yet), or, when none is given, a new one made at start in a temporary directory and removed
at stop. Either way the banner prints its path, so `.venv/bin/python -m tickets_admin decode KEY ID --key-file PATH`
reads the ids this server answers. On an endpoint the tables outlive the server: a new key at each start could give a
later ticket the id of an earlier one, so there the key file must be given."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tickets.opaque import OpaqueKeyError
from tickets.opaque_secret import StoredKeys
from tickets_deploy.opaque_keys import key_versions_in_use, new_key_file_text, read_key_file
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import DeploymentConfig

KEY_FILE_NAME = "opaque-keys.json"


class LocalKeys:
    """Where this server's keys are (`path`), whether it made them (`made`), and the function's reader of them."""

    def __init__(self, path: Path, made: bool, temporary: Path | None = None):
        self.path, self.made, self._temporary = path, made, temporary
        self.stored = StoredKeys(lambda: path.read_text(encoding="utf-8"), f"the key file {path}")

    def describe(self) -> str:
        made = "made at start" if self.made else "given"
        return f"{self.path} ({made}; .venv/bin/python -m tickets_admin decode KEY ID --key-file {self.path})"

    def close(self) -> None:
        """Forget keys made for this run only (with their temporary directory); a given file stays."""
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


def open_keys(config: DeploymentConfig, key_file: str | Path | None, *, persistent: bool) -> LocalKeys | None:
    """The keys for `config`'s opaque counters (None without any). `persistent`: the tables outlive the server."""
    versions = sorted(key_versions_in_use(config))
    if not versions:
        return None
    if key_file is None:
        if persistent:
            raise ConfigError(
                "opaque counters on an endpoint need their key file: the tables there outlive this server, and a new "
                "key at each start could give a later ticket the id of an earlier one. Give one with --key-file PATH "
                "(made there if it does not exist; make serve ENDPOINT_URL=... KEY_FILE=PATH)"
            )
        temporary = Path(tempfile.mkdtemp(prefix="tickets-local-keys-"))
        return LocalKeys(_new_file(temporary / KEY_FILE_NAME, versions[-1]), made=True, temporary=temporary)
    path = Path(key_file)
    if not path.exists():
        return LocalKeys(_new_file(path, versions[-1]), made=True)
    try:
        held = read_key_file(path)
    except OpaqueKeyError as err:
        raise ConfigError(f"--key-file {err}") from None
    missing = [version for version in versions if version not in held]
    if missing:
        raise ConfigError(
            f"--key-file {path} holds key versions {', '.join(map(str, sorted(held)))}, not {missing[0]}, which an "
            f"opaque counter's keyVersion asks for: add that version's key to the file (.venv/bin/python -m "
            "tickets_admin encode --help shows the format)"
        )
    return LocalKeys(path, made=False)


def _new_file(path: Path, newest: int) -> Path:
    """A key file of versions 1 .. newest, readable by its owner alone."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(new_key_file_text(range(1, newest + 1)))
    return path
