"""The local server's keys of opaque ids (docs/reference/local-server.md): the key file given with --key-file (made
there when it does not exist yet), or else a new one made at start in a temporary directory, removed at stop. The
banner prints its path for `tickets_admin decode`. On an endpoint the tables outlive the server: a new key at each
start could give a later ticket the id of an earlier one, so there the key file must be given. A key is what it was
(tickets/opaque/secret.py): a key file is made only for a table that has issued no opaque id (unless
--new-key-file), and one whose fingerprint is not the one the table recorded for its version is refused."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tickets.epochs import EPOCH_SEPARATOR, SHARD_SEPARATOR
from tickets.lane_item import Item
from tickets.opaque import OpaqueKeyError
from tickets.opaque.secret import StoredKeys, replaced
from tickets.tables import COUNTER_KEY, FINGERPRINT_PREFIX
from tickets_deploy.opaque_keys import key_versions_in_use, new_key_file_text, read_key_file
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import DeploymentConfig


class LocalKeys:
    """Where this server's keys are (`path`), whether it made them (`made`), and the function's reader of them."""

    def __init__(self, path: Path, made: bool, temporary: Path | None = None):
        self.path, self.made, self._temporary = path, made, temporary
        self.stored = StoredKeys(lambda: path.read_text(encoding="utf-8"), f"the key file {path}")

    def describe(self, endpoint_url: str | None) -> str:
        """Where the keys are, and the decode command that reads this server's ids."""
        made = "made at start" if self.made else "given"
        table = f"--endpoint-url {endpoint_url}" if endpoint_url else "--no-table-check"
        return f"{self.path} ({made}; .venv/bin/python -m tickets_admin decode KEY ID --key-file {self.path} {table})"

    def close(self) -> None:
        """Forget keys made for this run only (with their temporary directory); a given file stays."""
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


def open_keys(
    config: DeploymentConfig,
    key_file: str | Path | None,
    persistent: bool,
    table: Sequence[Item] = (),  # the counter table's items, read at start
    new_key_file: bool = False,
) -> LocalKeys | None:
    """The keys for `config`'s opaque counters (None without any). `persistent`: the tables outlive the server."""
    versions = sorted(key_versions_in_use(config))
    if not versions:
        return None
    items = {item[COUNTER_KEY]["S"]: item for item in table}
    if key_file is None and persistent:
        raise ConfigError(
            "opaque counters on an endpoint need their key file: the tables there outlive this server, and a new "
            "key at each start could give a later ticket the id of an earlier one. Give one with --key-file PATH "
            "(made there if it does not exist; make serve ENDPOINT_URL=... KEY_FILE=.tickets-local/keys.json)"
        )
    made = key_file is None or not Path(key_file).exists()
    if made:
        _refuse_a_new_key(config, items, key_file, new_key_file)
    path = Path(key_file or Path(tempfile.mkdtemp(prefix="tickets-local-keys-")) / "opaque-keys.json")
    if made:
        _new_file(path, versions[-1])
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
    for version in versions:
        problem = replaced(version, held[version], items.get(f"{FINGERPRINT_PREFIX}{version}"), f"--key-file {path}")
        if problem is not None:
            raise ConfigError(problem)
    return LocalKeys(path, made, temporary=path.parent if key_file is None else None)


def _refuse_a_new_key(config: DeploymentConfig, items: dict[str, Item], key_file: object, new_key_file: bool) -> None:
    opaque = {key for key, counter in config.counters.items() if counter.opaque is not None}
    versions = sorted(
        int(name.removeprefix(FINGERPRINT_PREFIX)) for name in items if name.startswith(FINGERPRINT_PREFIX)
    )
    lanes = sorted(name for name in items if name.split(SHARD_SEPARATOR)[0].split(EPOCH_SEPARATOR)[0] in opaque)
    if versions:
        what = f"ids of key versions {', '.join(map(str, versions))} (their keys' fingerprints are recorded)"
    elif lanes and not new_key_file:
        what = f"ids ({', '.join(lanes[:3])} issued before keys' fingerprints were recorded; --new-key-file makes one)"
    else:
        return
    raise ConfigError(
        f"{'--key-file ' + str(key_file) if key_file else 'no --key-file'}: no key file, and the counter table has "
        f"issued {what}: a new key would give new tickets the ids of old ones. Give the server the key file those ids "
        "were made with"
    )


def _new_file(path: Path, newest: int) -> Path:
    """A key file of versions 1 .. newest, readable by its owner alone (in a folder made for it if need be)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(new_key_file_text(range(1, newest + 1)))
    return path
