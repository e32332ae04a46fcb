"""An opaque counter through the local server over real HTTP (docs/reference/local-server.md): the server makes its
own key at start unless given one, prints where it is, and `python -m tickets_admin decode --key-file` reads the
ids it answers; the test kit and the Python client know the shape (next_ids; a lease refused at once); a key file
given to a server on a persistent endpoint keeps the ids of a restarted server distinct (and without one, such a
server refuses to start); --verbose prints no key."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from local_support import running_dynalite, write_cdk_json
from opaque_statistics import luhn_valid
from tickets.opaque import ALPHABETS, OpaqueConfig
from tickets_client import TicketsClient, TicketsError
from tickets_client.lease import TicketLease
from tickets_deploy.opaque_decode import OpaqueCodec
from tickets_deploy.opaque_keys import read_key_file
from tickets_local.testing import LocalTickets, LocalTicketsError

TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
TICKETS = {
    "regions": {"us-east-1": 0},
    "strictKeys": True,
    "tableName": "shop",
    "counters": {"orders": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS}, "plain": {}},
}


def admin_decode(config: Path, key_file: Path, ids: list[str]) -> list[str]:
    """`python -m tickets_admin decode orders ID... --key-file PATH`, as an operator runs it."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tickets_admin",
            "decode",
            "orders",
            *ids,
            "--key-file",
            str(key_file),
            "--no-table-check",
        ],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.fixture(scope="module")
def server():
    with LocalTickets(TICKETS) as running:
        yield running


def test_the_local_server_serves_ids_made_with_a_key_of_its_own_which_decode_reads(server, tmp_path):
    client = TicketsClient(server.url)
    server.reset()
    made = client.next_ids("orders", 50) + [client.next_ids("orders")[0] for _ in range(5)]
    assert len(set(made)) == 55 and all(len(each) == 10 and luhn_valid(each, ALPHABETS["digits"]) for each in made)
    assert server.key_file is not None and server.key_file.name == "opaque-keys.json"
    assert f"keys:     {server.key_file} (made at start;" in server.banner
    assert oct(server.key_file.stat().st_mode & 0o777) == "0o600"
    keys = read_key_file(server.key_file)
    assert set(keys) == {1} and len(keys[1]) == 32
    config = write_cdk_json(tmp_path, TICKETS)
    sample = made[::11]
    assert admin_decode(config, server.key_file, sample) == [
        f"{each} -> ticket {5000 + 11 * at} (key version 1)" for at, each in enumerate(sample)
    ]


def test_the_client_refuses_ids_to_next_and_a_lease_at_its_first_request(server):
    client = TicketsClient(server.url)
    with pytest.raises(TicketsError) as refused:
        client.next("orders")
    assert refused.value.code == "opaque_counter" and "next_ids()" in refused.value.message
    with pytest.raises(TicketsError) as plain:
        client.next_ids("plain")
    assert plain.value.code == "not_opaque"
    asked: list[int] = []

    class Counting:
        def block(self, key: str, count: int, *, idempotent: bool = True):
            asked.append(count)
            return client.block(key, count, idempotent=idempotent)

    lease = TicketLease(Counting(), "orders")
    with pytest.raises(TicketsError) as leased:
        lease.next()
    assert (leased.value.status, leased.value.code) == (400, "opaque_counter")
    assert "a caller cannot encode them without the key" in leased.value.message
    assert asked == [1000]  # one request: not halved down to 1 as a maxBlock refusal is
    lease.close()


def test_a_given_key_file_is_made_once_then_read_and_survives_the_server(tmp_path):
    key_file = tmp_path / "keys.json"
    with LocalTickets(TICKETS, key_file=key_file) as first:
        assert first.key_file == key_file and "(made at start;" in first.banner
        one = TicketsClient(first.url).next_ids("orders")[0]
    made = read_key_file(key_file)
    with LocalTickets(TICKETS, key_file=key_file) as second:
        assert "(given;" in second.banner
        assert TicketsClient(second.url).next_ids("orders")[0] == one  # moto starts empty: ticket 5000 again
    assert read_key_file(key_file) == made


def test_a_key_file_short_of_a_version_is_refused_at_start(tmp_path):
    key_file = tmp_path / "keys.json"
    key_file.write_text(json.dumps({"1": base64.b64encode(bytes(32)).decode()}))
    rotated = {**TICKETS, "counters": {"orders": {"max": 99_999_999, "opaque": {**TEN_DIGITS, "keyVersion": 2}}}}
    with pytest.raises(LocalTicketsError) as refused:
        LocalTickets(rotated, key_file=key_file).start()
    assert "holds key versions 1, not 2, which an opaque counter's keyVersion asks for" in str(refused.value)


def test_on_a_persistent_endpoint_the_key_file_keeps_a_restarted_servers_ids_distinct(tmp_path):
    """dynalite keeps the tables on disk: a second server continues the counter, and with the same key file its ids
    decode to the next tickets; without a key file such a server refuses to start (a new key each start could give
    a later ticket the id of an earlier one)."""
    key_file = tmp_path / "keys.json"
    with running_dynalite(tmp_path / "tables") as endpoint:
        with pytest.raises(LocalTicketsError) as refused:
            LocalTickets(TICKETS, endpoint_url=endpoint, arguments=["--without-ledger"]).start()
        assert "opaque counters on an endpoint need their key file" in str(refused.value)
        made = []
        for _ in range(2):
            with LocalTickets(
                TICKETS, endpoint_url=endpoint, key_file=key_file, arguments=["--without-ledger"]
            ) as running:
                made += _concurrently(TicketsClient(running.url))
    ids = OpaqueCodec(
        OpaqueConfig.from_json({**TEN_DIGITS, "keyVersion": 1, "keyVersions": 10}), read_key_file(key_file), "orders"
    )
    assert sorted(ids.decode(each)[0] for each in made) == list(range(5000, 5080))


def _concurrently(client: TicketsClient) -> list[str]:
    """20 ids, then 5 each from 4 threads at once: 40 ids."""
    made = client.next_ids("orders", 20)
    threads = [threading.Thread(target=lambda: made.extend(client.next_ids("orders", 5))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return made


def test_verbose_logs_carry_no_key(tmp_path):
    """The server's --verbose output (the handler's INFO lines and EMF metrics lines, the request log) while it
    serves ids: none holds the key, in any form."""
    config = write_cdk_json(tmp_path, TICKETS)
    key_file = tmp_path / "keys.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "tickets_local", "--config", str(config), "--port", "0", "--verbose"]
        + ["--key-file", str(key_file), "--exit-with-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = ""
        while "Ctrl-C stops it." not in banner:
            line = process.stdout.readline()
            assert line, process.stderr.read()
            banner += line
        url = next(line.split()[1] for line in banner.splitlines() if line.strip().startswith("url:"))
        client = TicketsClient(url)
        client.next_ids("orders", 3)
        client.next_ids("orders")
        client.state("orders")
        with pytest.raises(TicketsError):
            client.block("orders", 10)
    finally:
        out, err = process.communicate(timeout=60)  # closes its stdin: the server stops (--exit-with-stdin)
    printed = banner + out + err
    assert '"first_ticket"' in printed and "GET /_counters/orders 200" in err  # the verbose lines are there
    for key in read_key_file(key_file).values():
        assert base64.b64encode(key).decode() not in printed and key.hex() not in printed
