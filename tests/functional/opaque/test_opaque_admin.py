"""`python -m tickets_admin encode` and `decode`: an opaque counter's tickets as ids and back, with the settings
from cdk.json or, with --service, from the ledger alone, and the keys from a key file or the service's SSM
parameter (`put-key` writes it, in every region: tests/functional/opaque/test_opaque_keys.py); every refusal says what
is wrong. Here neither reads its table (--no-table-check: tests/functional/opaque/test_opaque_keys.py and
test_opaque_local.py read it). And the function's cold start: one without an
opaque counter never loads tickets.opaque."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from local_support import write_cdk_json
from tickets_admin.__main__ import main

REPO = Path(__file__).resolve().parents[3]
KEYS = {"1": base64.b64encode(bytes(range(32))).decode(), "2": base64.b64encode(bytes(range(32, 64))).decode()}
TICKETS = {
    "regions": {"us-east-1": 0},
    "strictKeys": True,
    "tableName": "shop",
    "counters": {
        "orders": {"max": 99_999_999, "opaque": {"width": 10, "alphabet": "digits", "check": "luhn"}},
        "codes": {"max": 10**12, "opaque": {"width": 10, "alphabet": "base32", "check": "luhn", "keyVersion": 2}},
        "plain": {},
    },
}


@pytest.fixture
def admin(tmp_path):
    """admin(*args) runs `python -m tickets_admin` in-process with cdk.json (and its ledger) and the key file
    in tmp_path: (exit status, stdout lines, stderr)."""
    config = write_cdk_json(tmp_path, TICKETS)
    (tmp_path / "keys.json").write_text(json.dumps(KEYS))

    def run(*args: str, key_file: str | None = "keys.json") -> tuple[int, list[str], str]:
        keys = ["--key-file", str(tmp_path / key_file)] if key_file else []
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([*args, "--config", str(config), *keys, "--no-table-check"])
        return status, out.getvalue().splitlines(), err.getvalue()

    return run


def test_encode_then_decode_gives_back_the_tickets(admin):
    status, out, _ = admin("encode", "orders", "0", "1", "99999999")
    assert status == 0
    assert out == [  # tests/unit/opaque/test_opaque.py pins the same ids for this key
        "0 -> 8752842271 (key version 1)",
        "1 -> 1388961516 (key version 1)",
        "99999999 -> 7139262419 (key version 1)",
    ]
    status, out, _ = admin("decode", "orders", "8752842271", "1388961516", "7139262419")
    assert status == 0
    assert out == [
        "8752842271 -> ticket 0 (key version 1)",
        "1388961516 -> ticket 1 (key version 1)",
        "7139262419 -> ticket 99999999 (key version 1)",
    ]


def test_a_thousand_ids_decode_to_their_tickets_under_each_version(admin):
    for version in ("1", "2"):
        tickets = [str(ticket) for ticket in range(5000, 6000)]
        status, out, _ = admin("encode", "orders", *tickets, "--key-version", version)
        ids = [line.split(" -> ")[1].split()[0] for line in out]
        assert status == 0 and len(set(ids)) == 1000
        status, out, _ = admin("decode", "orders", *ids)
        assert out == [f"{each} -> ticket {ticket} (key version {version})" for each, ticket in zip(ids, tickets)]


def test_base32_ids_use_the_counters_key_version_and_read_as_crockford_says(admin):
    status, out, _ = admin("encode", "codes", "123456789")
    assert status == 0 and out[0].startswith("123456789 -> ") and out[0].endswith(" (key version 2)")
    made = out[0].split()[2]
    assert len(made) == 10 and set(made) <= set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    typed = "-".join([made[:5], made[5:]]).lower().replace("0", "o").replace("1", "l")
    assert admin("decode", "codes", typed)[1] == [f"{typed} -> ticket 123456789 (key version 2)"]


def test_with_service_the_settings_come_from_the_ledger(admin, tmp_path):
    (tmp_path / "cdk.json").unlink()  # the ledger alone: an app built on the construct
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(
            ["--service", "shop", "--ledger", str(tmp_path / "tickets.lock.json"), "decode", "orders", "8752842271"]
            + ["--key-file", str(tmp_path / "keys.json"), "--no-table-check"]
        )
    assert status == 0 and out.getvalue() == "8752842271 -> ticket 0 (key version 1)\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("decode", "orders", "8752842217"), "not an id of orders: '8752842217': its check character is wrong"),
        (("decode", "orders", "875284227"), "not an id of orders: '875284227' has 9 characters: these ids have 10"),
        (("decode", "orders", "87528422X1"), "'X' (character 9) is not one of 0123456789"),
        (("encode", "orders", "100000000"), "ticket 100000000: the ids of orders hold tickets 0 to 99999999"),
        (("encode", "orders", "5", "--key-version", "11"), "--key-version 11: the ids of orders have key versions 1"),
        (("encode", "orders", "5", "--key-version", "3"), "key version 3 is not among the keys given (they hold"),
        (("encode", "plain", "5"), "plain is not an opaque counter in "),
        (("encode", "nobody", "5"), "nobody is not an opaque counter in "),
    ],
)
def test_refusals_say_what_is_wrong(admin, args, says):
    status, out, err = admin(*args)
    assert (status, out) == (1, []) and err.startswith("error: ") and says in err, err


def test_the_keys_must_be_readable(admin, tmp_path):
    status, _, err = admin("encode", "orders", "5", key_file="absent.json")
    assert status == 1 and "absent.json: cannot be read (No such file or directory)" in err
    (tmp_path / "short.json").write_text(json.dumps({"1": base64.b64encode(b"short").decode()}))
    status, _, err = admin("encode", "orders", "5", key_file="short.json")
    assert status == 1 and "short.json: keys: '1' must be a key version (1, 2, ...) and its key 16 to 64 bytes" in err


def test_the_commands_run_as_a_user_runs_them(tmp_path):
    write_cdk_json(tmp_path, TICKETS)
    (tmp_path / "keys.json").write_text(json.dumps(KEYS))
    result = subprocess.run(
        [sys.executable, "-m", "tickets_admin", "decode", "orders", "6844852092", "--key-file", "keys.json"]
        + ["--no-table-check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (0, "6844852092 -> ticket 0 (key version 2)\n"), result.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "tickets_admin", "encode", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert "--key-file PATH" in helped.stdout and "--region REGION" in helped.stdout  # the keys' parameter's
    assert "--endpoint-url URL" in helped.stdout and "--no-table-check" in helped.stdout  # the fingerprints' table


def test_a_function_without_an_opaque_counter_never_loads_the_permutation():
    """tickets.opaque is compiled at cold start only where a counter is opaque (tickets.settings imports it when
    it reads one): the Lambda asset ships no bytecode."""
    script = (
        "import sys\n"
        "from tickets.app import create_app\n"
        "from tickets.settings import CounterConfig, Settings\n"
        "settings = Settings.from_json(Settings(counters={'orders': CounterConfig(start=5)}).to_json())\n"
        "create_app(settings, None, 'counters', 'idempotency', region='us-east-1')\n"
        "print('tickets.opaque' in sys.modules)\n"
        "Settings.from_json(sys.argv[1])\n"
        "print('tickets.opaque' in sys.modules)\n"
    )
    opaque = json.dumps({"counters": {"orders": {"start": 1, "stride": 1, "max": 99, "shards": 1, "opaque": {
        "alphabet": "digits", "keyVersion": 1, "keyVersions": 10, "width": 10}}}})  # fmt: skip
    environment = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true"}
    loaded = subprocess.run(
        [sys.executable, "-c", script, opaque], capture_output=True, text=True, env=environment, check=True
    )
    assert loaded.stdout.split() == ["False", "True"]
