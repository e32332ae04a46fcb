"""A key is what it was (docs/explanation/opaque-ids.md#a-key-is-what-it-was), through real processes: a local server
on a persistent endpoint (dynalite) issues ids; its key file lost, or replaced by a new version-1 key, the server
refuses to start naming the version (--new-key-file does not help once a fingerprint is recorded), tickets_admin
decode refuses the replaced key, and with the key restored the ids go on, never repeating one; a new keyVersion
records its own fingerprint. Key files made in the docs' place are git-ignored; an opaque counter's exhausted
refusal names no number."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from local_support import call, running_dynalite
from tickets.opaque import OpaqueConfig
from tickets_client import TicketsClient
from tickets_deploy.opaque_decode import OpaqueCodec
from tickets_deploy.opaque_keys import read_key_file
from tickets_local.testing import LocalTickets, LocalTicketsError

REPO = Path(__file__).resolve().parents[3]
TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
TICKETS = {
    "regions": {"us-east-1": 0},
    "strictKeys": True,
    "tableName": "shop",
    "counters": {"orders": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS}},
}
ROTATED = {
    **TICKETS,
    "counters": {"orders": {**TICKETS["counters"]["orders"], "opaque": {**TEN_DIGITS, "keyVersion": 2}}},
}
ON_AN_ENDPOINT = ["--without-ledger"]  # a config of the test's own, never changed


def refusal(config: dict, endpoint: str, key_file: Path, *more: str) -> str:
    with pytest.raises(LocalTicketsError) as refused:
        LocalTickets(config, endpoint_url=endpoint, key_file=key_file, arguments=[*ON_AN_ENDPOINT, *more]).start()
    return str(refused.value)


def issue(config: dict, endpoint: str, key_file: Path, count: int) -> list[str]:
    with LocalTickets(config, endpoint_url=endpoint, key_file=key_file, arguments=ON_AN_ENDPOINT) as server:
        return TicketsClient(server.url).next_ids("orders", count)


def test_a_lost_or_replaced_key_file_is_refused_naming_its_version_and_no_id_repeats(tmp_path: Path) -> None:
    key_file = tmp_path / ".tickets-local" / "keys.json"  # the docs' place (make serve KEY_FILE=...)
    config = tmp_path / "cdk.json"
    config.write_text(json.dumps({"context": {"tickets": TICKETS}}))
    with running_dynalite(tmp_path / "tables") as endpoint:
        issued = issue(TICKETS, endpoint, key_file, 200)  # the key file is made, in a folder of its own
        assert (key_file.parent.stat().st_mode & 0o777, key_file.stat().st_mode & 0o777) == (0o700, 0o600)
        original = key_file.read_bytes()

        key_file.unlink()  # lost
        for more in ((), ("--new-key-file",)):
            message = refusal(TICKETS, endpoint, key_file, *more)
            assert "the counter table has issued ids of key versions 1" in message, message
        assert not key_file.exists()

        key_file.write_text(json.dumps({"1": base64.b64encode(secrets.token_bytes(32)).decode()}))  # replaced
        message = refusal(TICKETS, endpoint, key_file)
        assert f"key version 1 in --key-file {key_file} is not the key its first ids were made with" in message
        decode = subprocess.run(
            [sys.executable, "-m", "tickets_admin", "decode", "orders", issued[0], "--key-file", str(key_file)]
            + ["--endpoint-url", endpoint, "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert decode.returncode == 1 and "key version 1 in --key-file" in decode.stderr, decode.stderr

        key_file.write_bytes(original)  # restored: the ids go on
        issued += issue(TICKETS, endpoint, key_file, 200)
        keys = read_key_file(key_file)
        keys[2] = secrets.token_bytes(32)  # rotation: a new version whose first use records its own fingerprint
        key_file.write_text(json.dumps({str(v): base64.b64encode(k).decode() for v, k in keys.items()}))
        rotated = issue(ROTATED, endpoint, key_file, 100)
    assert len(set(issued + rotated)) == 500
    one = OpaqueConfig.from_json({**TEN_DIGITS, "keyVersion": 1, "keyVersions": 10})
    assert [OpaqueCodec(one, keys, "orders").decode(each) for each in issued + rotated] == [
        (ticket, 1 if ticket < 5400 else 2) for ticket in range(5000, 5500)
    ]


def test_key_files_in_the_docs_place_are_git_ignored() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for path in (".tickets-local/keys.json", "tickets-local-keys.json", "tickets-keys.json"):
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO, timeout=30)
        assert ignored.returncode == 0, f"{path} is not git-ignored"


def test_an_opaque_counters_exhausted_refusal_names_no_number() -> None:
    """Its max and step would tell a caller how many ids are left, so how many were issued: what the ids hide."""
    small = {"regions": {"us-east-1": 0}, "counters": {"orders": {"start": 5000, "max": 5009, "opaque": TEN_DIGITS}}}
    small["counters"]["plain"] = {"start": 5000, "max": 5009}
    with LocalTickets(small) as server:
        for key in ("orders", "plain"):
            assert call(server.url, f"/{key}?count=8", method="POST").status == 200
        opaque, plain = (call(server.url, f"/{key}?count=5", method="POST") for key in ("orders", "plain"))
    assert opaque.status == plain.status == 409 and opaque.json()["error"] == "exhausted"
    assert "5009" in plain.json()["message"]
    assert opaque.json()["message"] == "orders cannot issue that many more: ask for fewer. Nothing was issued."
