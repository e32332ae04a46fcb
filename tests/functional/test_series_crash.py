"""kill -9 the local server while clients issue series numbers; its DynamoDB (dynalite) lives on in its
own process. A new server on the same tables, and the clients' retries with their Idempotency-Keys, leave
every number accounted for: the audit is clean, every key holds at most one entry, and every key that
was answered, or retried, got that entry's number.

dynalite itself dies when a request it is reading is cut off (its `req.on('error')` throws: seen when the
kill lands while the server sends it a request), so it keeps its tables on disk (`--path`) and, if the
kill took it down too, is started again on them: DynamoDB itself does not go away with a client."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError

from local_support import running_dynalite
from tickets_admin.journal import SeriesTable
from tickets_client import TicketsClient, TicketsError
from tickets_local.testing import LocalTickets

pytestmark = pytest.mark.slow


@pytest.fixture
def tables_directory(tmp_path):
    return tmp_path / "dynalite"


@pytest.fixture
def dynalite(tables_directory):
    """A dynalite of this test's own, its tables in tables_directory (local_support.running_dynalite)."""
    with running_dynalite(tables_directory) as endpoint:
        yield endpoint


def _answers(endpoint: str) -> bool:
    try:
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1").list_tables()
    except (BotoCoreError, ClientError):
        return False
    return True


KEY = "invoices"
CONFIG = {"regions": {"us-east-1": 0}, "tableName": "crash-test", "series": {KEY: {"start": 1, "format": "INV-{n:06}"}}}
CLIENTS = 4
ANSWERED_BEFORE_THE_KILL = 40  # numbers answered before the kill: the kill lands mid-run, whenever that is


def test_kill_9_mid_run_leaves_every_number_accounted_for(dynalite, tables_directory) -> None:
    answered: dict[str, int] = {}  # Idempotency-Key -> the number it was answered
    unanswered: list[str] = []  # keys whose request got no answer (in flight at the kill, or after it)
    lock = threading.Lock()
    first = LocalTickets(CONFIG, endpoint_url=dynalite, arguments=["--without-ledger"]).start()

    def issue(client_index: int) -> None:
        client = TicketsClient(first.url, max_attempts=2, timeout=5)
        for n in range(10_000):
            idempotency_key = f"client{client_index}-{n}"
            try:
                number = client.series(KEY, ref=f"order {idempotency_key}", idempotency_key=idempotency_key)
            except TicketsError:
                with lock:
                    unanswered.append(idempotency_key)
                return  # the server is gone
            with lock:
                answered[idempotency_key] = number.ticket

    threads = [threading.Thread(target=issue, args=(index,)) for index in range(CLIENTS)]
    for thread in threads:
        thread.start()
    while len(answered) < ANSWERED_BEFORE_THE_KILL:
        time.sleep(0.01)
    os.kill(first._process.pid, signal.SIGKILL)  # type: ignore[union-attr]
    for thread in threads:
        thread.join(timeout=60)
    first.stop()
    assert len(unanswered) == CLIENTS

    with contextlib.ExitStack() as restarted:
        endpoint = dynalite if _answers(dynalite) else restarted.enter_context(running_dynalite(tables_directory))
        _retry_and_audit(endpoint, answered, unanswered)


def _retry_and_audit(dynalite: str, answered: dict[str, int], unanswered: list[str]) -> None:
    with LocalTickets(CONFIG, endpoint_url=dynalite, arguments=["--without-ledger"]) as second:
        client = TicketsClient(second.url)
        # Each in-flight key retried (409 in_progress until the killed attempt's lock expires), and some
        # answered ones asked again: the numbers they were given.
        retried = {key: client.series(KEY, ref=f"order {key}", idempotency_key=key).ticket for key in unanswered}
        again = sorted(answered)[:5]
        assert {key: client.series(KEY, ref=f"order {key}", idempotency_key=key).ticket for key in again} == {
            key: answered[key] for key in again
        }

    table = SeriesTable(boto3.client("dynamodb", endpoint_url=dynalite, region_name="us-east-1"), "crash-test-series")
    [audit] = table.audit(KEY)
    assert audit.clean, audit.lines()
    holders: dict[str, list[int]] = {}
    for head in table.heads(KEY):
        for entry in table.entries(head):
            holders.setdefault(entry.idempotency_key, []).append(entry.ticket)
    assert all(len(numbers) == 1 for numbers in holders.values()), holders
    for key, number in {**answered, **retried}.items():
        assert holders[key] == [number]
    assert audit.issued == len(holders) == len(answered) + len(retried)
