"""Series through the real handler on moto: issuing, retries, voids, the journal, and the refusals."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import io
import json
import os
import subprocess
import sys

import boto3
import pytest

from local_support import SERIES_KEY, TICKETS_CONFIG, StubServer, json_reply, running_dynalite, write_cdk_json
from moto_deployment import (
    COUNTER_TABLE,
    EVENT_TEMPLATE,
    IDEMPOTENCY_TABLE,
    SERIES_TABLE,
    FakeLambdaContext,
    Region,
    function_client,
    function_url_event,
)
from tickets import timing
from tickets.access.rules import caller
from tickets.app import create_app
from tickets.series.config import SeriesConfig
from tickets.series.journal import Entry, entry_key, request_key
from tickets.settings import SERIES_TABLE_ENV
from tickets.tables import create_series_table_arguments
from tickets_admin.__main__ import main as admin_main
from tickets_admin.journal import Head, audit
from tickets_client import SeriesNumber, TicketsClient, TicketsError
from tickets_deploy.config import parse_config, to_raw
from tickets_deploy.environment import handler_environment, region_settings
from tickets_deploy.rules import ConfigError
from tickets_deploy.series_rules import parse_series

# The issue's example: an Indian fiscal-year invoice series (April to March, IST).
INVOICES = {
    "start": 1,
    "period": "yearly",
    "periodStartMonth": 4,
    "utcOffset": "+05:30",
    "format": "INV/{series}/{n}",
    "formatMaxLength": 16,
}
CONFIG = {"regions": {"us-east-1": 0}, "counters": {"orders": {}}, "series": {"invoices": INVOICES}}
CALLER = caller(EVENT_TEMPLATE)  # the signer of every test request: an assumed role, without its session
NOW = datetime.datetime(2026, 11, 24, 12, 0, tzinfo=datetime.UTC)


class Clock:
    def __init__(self, now: datetime.datetime):
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


def with_series(region: Region, clock: Clock) -> Region:
    """`region`'s handler with the series table and its clock pinned."""
    region._app = create_app(
        region.settings,
        function_client(region.region),
        COUNTER_TABLE,
        IDEMPOTENCY_TABLE,
        region=region.region,
        series_table=SERIES_TABLE,
        clock=clock,
    )
    return region


@pytest.fixture
def moto_budget(monkeypatch) -> None:
    """A request budget for reading megabytes from moto, which takes seconds (more on a loaded machine)
    where DynamoDB takes milliseconds: for tests of size, not of time."""
    monkeypatch.setattr(timing, "REQUEST_BUDGET_SECONDS", 60.0)


@pytest.fixture
def series_api(deploy, clock) -> Region:
    """The handler deployed with CONFIG (a counter and the invoice series), its clock pinned."""
    return with_series(deploy(CONFIG), clock)


def issue(api: Region, idempotency_key: str, ref: str | None = None, key: str = "invoices"):
    body = None if ref is None else json.dumps({"ref": ref})
    return api.post(f"/_series/{key}", headers={"Idempotency-Key": idempotency_key}, body=body)


def test_numbers_are_dense_and_carry_their_id(series_api):
    answers = [issue(series_api, f"k{i}", ref=f"order {i}") for i in range(3)]
    assert [a.status for a in answers] == [200, 200, 200]
    assert [a.body for a in answers] == [
        {"key": "invoices", "series": "2026-27", "ticket": n, "id": f"INV/2026-27/{n}"} for n in (1, 2, 3)
    ]


def test_a_retry_gets_its_first_number(series_api):
    first = issue(series_api, "k1", ref="order 1")
    issue(series_api, "k2")
    again = issue(series_api, "k1", ref="order 1")
    assert again.status == 200 and again.body == first.body


def test_a_retry_with_another_ref_is_refused(series_api):
    issue(series_api, "k1", ref="order 1")
    answer = issue(series_api, "k1", ref="order 2")
    assert answer.status == 422 and answer.body["error"] == "idempotency_key_reused"


def test_the_period_restarts_numbering_at_its_first_instant(series_api, clock):
    clock.now = datetime.datetime(2027, 3, 31, 18, 29, 59, tzinfo=datetime.UTC)  # 23:59:59 IST
    assert issue(series_api, "a").body["series"] == "2026-27"
    clock.now = datetime.datetime(2027, 3, 31, 18, 30, tzinfo=datetime.UTC)  # 1 April 00:00 IST
    assert issue(series_api, "b").body == {"key": "invoices", "series": "2027-28", "ticket": 1, "id": "INV/2027-28/1"}


def test_refusals(series_api):
    assert series_api.post("/_series/invoices").status == 400  # no Idempotency-Key
    assert series_api.get("/_series/invoices").status == 405
    assert series_api.get("/_series/invoices").headers["Allow"] == "POST"
    unknown = issue(series_api, "k", key="orders")  # a counter is not a series
    assert unknown.status == 404 and "not a configured series" in unknown.body["message"]
    long_ref = issue(series_api, "k", ref="x" * 129)
    assert long_ref.status == 400
    assert series_api.items(SERIES_TABLE) == []  # nothing written by a refusal


@pytest.mark.parametrize(
    "config, next_period",
    [({"start": 1, "max": 2, "format": "R-{series}-{n}"}, False), ({**INVOICES, "max": 2}, True)],
    ids=["no period", "yearly"],
)
def test_a_spent_series_names_the_way_on(deploy, clock, config, next_period):
    """Past its max (permanent, as every field of a series), a series answers 409 exhausted naming what to do: a
    new series under a new name whose ids differ, and for a series with periods, the next period."""
    api = with_series(deploy({**CONFIG, "series": {"invoices": config}}), clock)
    assert [issue(api, f"k{n}").status for n in range(2)] == [200, 200]
    spent = issue(api, "k2")
    assert (spent.status, spent.body["error"]) == (409, "exhausted")
    assert "a new series under a new name" in spent.body["message"] and "{key}" in spent.body["message"]
    assert ("the next period starts again" in spent.body["message"]) == next_period


def test_voids_are_recorded_once_and_never_undone(series_api):
    issue(series_api, "k1", ref="order 1")
    void = {"series": "2026-27", "ticket": 1, "reason": "customer cancelled"}
    first = series_api.post("/_series/invoices/void", body=json.dumps(void))
    assert first.status == 200
    assert first.body["voided"]["reason"] == "customer cancelled" and first.body["voided"]["by"] == CALLER
    again = series_api.post("/_series/invoices/void", body=json.dumps({**void, "reason": "another reason"}))
    assert again.status == 200 and again.body["voided"] == first.body["voided"]
    never = series_api.post("/_series/invoices/void", body=json.dumps({**void, "ticket": 2}))
    assert never.status == 404
    no_reason = series_api.post("/_series/invoices/void", body=json.dumps({**void, "reason": ""}))
    assert no_reason.status == 400


def test_the_journal_pages_in_order(series_api):
    for i in range(5):
        issue(series_api, f"k{i}", ref=f"order {i}")
    first = series_api.get("/_series/invoices/journal", query={"series": "2026-27", "limit": "2"})
    assert first.status == 200
    assert [e["ticket"] for e in first.body["entries"]] == [1, 2] and first.body["next"] == 2
    rest = series_api.get("/_series/invoices/journal", query={"series": "2026-27", "after": "2", "limit": "10"})
    assert [e["ticket"] for e in rest.body["entries"]] == [3, 4, 5] and rest.body["next"] is None
    entry = rest.body["entries"][0]
    assert entry["idempotencyKey"] == "k2" and entry["ref"] == "order 2" and entry["caller"] == CALLER
    assert series_api.get("/_series/invoices/journal").status == 400  # no series named


def test_series_config_refusals():
    def refused(raw: dict, slots: int = 1) -> str:
        with pytest.raises(ValueError) as err:
            parse_series("invoices", raw, region_slots=slots, where="tickets.series.invoices")
        return str(err.value)

    assert "unknown placeholder {year}" in refused({"format": "INV/{year}/{n}"})
    assert "lacks {series}" in refused({"period": "yearly", "format": "INV/{n}"})
    assert "lacks {series}" in refused({"format": "INV/{n}"}, slots=2)
    assert "passes formatMaxLength 16" in refused({**INVOICES, "max": 99999})
    assert "no id fits" in refused({**INVOICES, "format": "INVOICE-NUMBER/{series}/{n}"})
    assert "utcOffset" in refused({**INVOICES, "utcOffset": "+5:30"})
    assert "periodStartMonth" in refused({**INVOICES, "periodStartMonth": 13})
    # The example's longest id: INV/2026-27/9999, 16 characters: its max is derived from the format.
    assert parse_series("invoices", INVOICES, region_slots=1, where="w").max == 9999
    assert parse_series("i", {"format": "{n:06}"}, region_slots=1, where="w") == SeriesConfig(format="{n:06}")


@pytest.fixture
def admin(tmp_path):
    """Run `python -m tickets_admin COMMAND ...` on the tests' tables: (status, stdout lines, stderr).
    Only the command's own output (not capsys: the handler's metrics lines go to stdout too)."""

    def run(*args: str) -> tuple[int, list[str], str]:
        config = write_cdk_json(tmp_path, CONFIG)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = admin_main([*args, "--config", str(config), "--table", COUNTER_TABLE])
        return status, out.getvalue().splitlines(), err.getvalue()

    return run


def test_admin_journal_and_audit(series_api, admin):
    for i in range(3):
        issue(series_api, f"k{i}", ref=f"order {i}")
    series_api.post("/_series/invoices/void", body=json.dumps({"series": "2026-27", "ticket": 2, "reason": "typo"}))

    status, lines, _ = admin("journal", "invoices")
    assert status == 0
    entries = [json.loads(line) for line in lines]
    assert [(e["ticket"], e["id"], e["ref"]) for e in entries] == [
        (n, f"INV/2026-27/{n}", f"order {n - 1}") for n in (1, 2, 3)
    ]
    assert entries[1]["voided"]["reason"] == "typo" and entries[0]["voided"] is None

    status, lines, _ = admin("journal", "invoices", "--series", "2026-27", "--format", "csv")
    assert status == 0 and lines[0].startswith("key,series,ticket,id,time") and len(lines) == 4
    assert lines[2].endswith(f",{CALLER},{entries[1]['voided']['at']},typo")

    status, lines, _ = admin("audit", "invoices")
    assert status == 0
    assert lines == ["invoices 2026-27: numbers 1..3: 3 issued, 1 voided", "audit: clean (1 series, 0 with problems)"]


def test_admin_audit_names_a_number_without_an_entry(series_api, admin):
    for i in range(4):
        issue(series_api, f"k{i}")
    # What the service never does: an entry deleted by hand (a restore that lost it, a stray script).
    series_api.client.delete_item(TableName=SERIES_TABLE, Key=entry_key("invoices", "2026-27", 2))
    status, lines, _ = admin("audit", "invoices", "--series", "2026-27")
    assert status == 1
    assert lines == [
        "invoices 2026-27: numbers 1..4: 3 issued, 0 voided",
        "  UNACCOUNTED (no journal entry): 2",
        "audit: FAILED (1 series, 1 with problems)",
    ]
    status, _, err = admin("audit", "invoices", "--series", "1999")
    assert status == 1 and "no series '1999' of 'invoices'" in err


def test_audit_names_a_number_recorded_twice() -> None:
    """An export read back (or a table edited by hand) with two entries of one number."""
    head = Head("invoices", "2026", start=1, last=3)
    entry = Entry("invoices", "2026", 1, "2026-01-01T00:00:00.000Z", CALLER, "k1")
    entries = [entry, dataclasses.replace(entry, ticket=2), dataclasses.replace(entry, ticket=2, idempotency_key="k")]
    result = audit(head, entries)
    assert not result.clean and result.twice == [2] and result.unaccounted == [3]


def test_the_config_field_carries_every_series_to_the_function():
    config = parse_config(CONFIG)
    assert region_settings(config, "us-east-1").series == {"invoices": config.series["invoices"]}
    assert parse_config(to_raw(config)) == config  # every field written back, the derived max too
    assert to_raw(config)["series"]["invoices"]["max"] == 9999
    environment = handler_environment(
        config, "us-east-1", counter_table="t", idempotency_table="t-i", series_table="t-series"
    )
    assert environment[SERIES_TABLE_ENV] == "t-series"
    plain = parse_config({"regions": {"us-east-1": 0}})
    assert SERIES_TABLE_ENV not in handler_environment(plain, "us-east-1", counter_table="t", idempotency_table="i")


@pytest.mark.parametrize(
    "series, message",
    [
        ({"orders": {}}, "'orders' is a counter"),
        ({"default": {}}, "'default' is a counter"),
        ({"invoices": {"format": "INV-{n}", "period": "yearly"}}, "lacks {series}"),
        ({"invoices": {**INVOICES, "format": "INV/{series}/{number}"}}, "unknown placeholder {number}"),
        ({"invoices": {**INVOICES, "max": 100000}}, "passes formatMaxLength 16"),
        ({"invoices": {"colour": "red"}}, "unknown field(s) colour"),
    ],
)
def test_synthesis_refuses(series, message):
    with pytest.raises(ConfigError) as err:
        parse_config({**CONFIG, "series": series})
    assert message in str(err.value) and "tickets.series" in str(err.value)


# --- the Python client ---------------------------------------------------------------------------


def test_the_python_client_issues_voids_and_pages_the_journal(tickets_servers):
    server = tickets_servers(TICKETS_CONFIG)
    server.reset()
    client = TicketsClient(server.url)
    first = client.series(SERIES_KEY, ref="order 1")
    assert first == SeriesNumber(SERIES_KEY, "all", 1, "V-all-00001")
    kept = client.series(SERIES_KEY, ref="order 2", idempotency_key="document-2")
    assert client.series(SERIES_KEY, ref="order 2", idempotency_key="document-2") == kept  # the same number
    client.series(SERIES_KEY)
    voided = client.void(SERIES_KEY, "all", 2, "order 2 cancelled")
    assert voided["voided"]["reason"] == "order 2 cancelled"
    entries = list(client.journal(SERIES_KEY, "all", limit=2))  # two pages, then the last
    assert [(e["ticket"], e["ref"], e["idempotencyKey"] == "document-2") for e in entries] == [
        (1, "order 1", False),
        (2, "order 2", True),
        (3, None, False),
    ]
    with pytest.raises(TicketsError) as refused:
        client.void(SERIES_KEY, "all", 99, "never issued")
    assert refused.value.status == 404


def test_the_python_client_sends_one_idempotency_key_for_every_attempt():
    answer = {"key": "invoices", "series": "2026", "ticket": 4, "id": "INV/2026/4"}
    with StubServer(
        [json_reply(503, {"error": "unavailable", "message": "try again"}), json_reply(200, answer)]
    ) as stub:
        number = TicketsClient(stub.url, sleep=lambda _: None).series("invoices", ref="order 9")
    assert number == SeriesNumber("invoices", "2026", 4, "INV/2026/4")
    first, retry = stub.requests
    assert first.headers["idempotency-key"] == retry.headers["idempotency-key"]
    assert json.loads(first.body) == {"ref": "order 9"} and first.headers["content-type"] == "application/json"
    assert (first.method, first.path) == ("POST", "/_series/invoices")


def test_a_retry_in_another_region_gets_another_number(deploy, clock):
    """docs/reference/series.md: each region has its own series table, so one Idempotency-Key sent to two regions
    takes a number in each (in each region's own series)."""
    config = {**CONFIG, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    east, west = (with_series(deploy(config, region), clock) for region in ("us-east-1", "eu-west-1"))
    first, retry = (issue(api, "order-88412", ref="order 88412") for api in (east, west))
    assert (first.status, retry.status) == (200, 200)
    assert (first.body["series"], first.body["ticket"]) == ("2026-27-r0", 1)
    assert (retry.body["series"], retry.body["ticket"]) == ("2026-27-r1", 1)
    assert issue(east, "order-88412", ref="order 88412").body == first.body  # a retry in the same region


def test_audit_names_an_idempotency_key_holding_two_numbers(series_api, admin) -> None:
    """What a late write could once make (docs/explanation/series.md): one caller's Idempotency-Key with two
    entries. Every number has its entry, yet the audit fails naming the key; another caller's same key
    is another request."""
    for i in range(3):
        issue(series_api, f"k{i}", ref=f"order {i}")
    second = Entry("invoices", "2026-27", 4, "2026-11-24T12:00:00.000Z", CALLER, "k1", "order 1")
    series_api.client.put_item(TableName=SERIES_TABLE, Item=second.to_item())
    other = Entry("invoices", "2026-27", 5, "2026-11-24T12:00:00.000Z", "arn:aws:iam::123456789012:user/b", "k1")
    series_api.client.put_item(TableName=SERIES_TABLE, Item=other.to_item())
    status, lines, _ = admin("audit", "invoices")
    assert status == 1
    assert lines == [
        "invoices 2026-27: numbers 1..5: 5 issued, 0 voided",
        f"  ONE IDEMPOTENCY-KEY, 2 NUMBERS: 'k1' of {CALLER}: 2, 4",
        "audit: FAILED (1 series, 1 with problems)",
    ]


@pytest.mark.slow
def test_a_journal_past_a_querys_megabyte_is_read_whole(series_api, admin, moto_budget):
    """DynamoDB ends a Query at 1 MB whatever its Limit: 500 voided entries with long reasons and refs pass it. The
    journal route's page, `tickets_admin journal` and the audit follow on and miss no entry."""
    reason = "订单取消" * 125  # 500 characters, 1,500 bytes
    for n in range(1, 601):
        void = {"voidedBy": {"S": CALLER}, "voidedAt": {"S": "2026-11-24T12:00:00.000Z"}, "voidReason": {"S": reason}}
        idempotency_key = f"k{n}".ljust(128, "-")
        entry = Entry("invoices", "2026-27", n, "2026-11-24T12:00:00.000Z", CALLER, idempotency_key, "订" * 128)
        series_api.client.put_item(TableName=SERIES_TABLE, Item={**entry.to_item(), **void})
    page = series_api.get("/_series/invoices/journal", query={"series": "2026-27", "limit": "500"})
    assert [e["ticket"] for e in page.body["entries"]] == list(range(1, 501)) and page.body["next"] == 500
    status, lines, _ = admin("journal", "invoices")
    assert status == 0 and [json.loads(line)["ticket"] for line in lines] == list(range(1, 601))
    status, lines, _ = admin("audit", "invoices")
    assert (status, lines[0]) == (0, "invoices 2026-27: numbers 1..600: 600 issued, 600 voided")


def test_a_later_config_never_moves_the_series_start_the_audit_reads(series_api, admin, deploy, clock):
    """The head records the series' first number as its first request wrote it: a function on another
    config (a region left on an older version, a rollback) cannot make the audit start above numbers
    that exist."""
    for i in range(5):
        issue(series_api, f"k{i}")
    moved = {**CONFIG, "series": {"invoices": {**INVOICES, "start": 1000}}}
    later = with_series(deploy(moved), clock)
    assert issue(later, "k-later").status == 200
    status, lines, _ = admin("audit", "invoices")
    assert (status, lines[0]) == (0, "invoices 2026-27: numbers 1..6: 6 issued, 0 voided")


def test_two_callers_idempotency_keys_never_name_one_request():
    """An IAM user's path may hold `#`, and so may an Idempotency-Key: `a` sending `b/alice#K` and the
    user `a#b/alice` sending `K` are two requests, each with its own record."""
    first = request_key("invoices", "arn:aws:iam::111122223333:user/a", "b/alice#K")
    second = request_key("invoices", "arn:aws:iam::111122223333:user/a#b/alice", "K")
    assert first != second


def test_a_repeated_void_is_not_counted_again(series_api, capsys):
    """SeriesVoided counts numbers voided, not void requests: a repeat answers the first void only."""
    issue(series_api, "k1")
    void = json.dumps({"series": "2026-27", "ticket": 1, "reason": "customer cancelled"})
    capsys.readouterr()
    assert [series_api.post("/_series/invoices/void", body=void).status for _ in range(2)] == [200, 200]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [line.get("SeriesVoided") for line in lines] == [[1.0]]


def test_a_function_without_series_never_loads_the_journals_code():
    """Most functions serve no series: the journal's modules stay out of their cold start."""
    script = (
        "import sys\n"
        "from tickets.app import create_app\n"
        "from tickets.settings import Settings\n"
        "create_app(Settings(), None, 'counters', 'idempotency', region='us-east-1')\n"
        "print(sorted(name for name in sys.modules if name.startswith('tickets.series.')))\n"
    )
    environment = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true"}
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=True)
    # Its handlers' module (bound when the app is built) and the config: no journal, store or request parsing.
    assert loaded.stdout.strip() == "['tickets.series.config', 'tickets.series.routes']"


def test_text_that_is_not_unicode_is_refused(series_api, deploy):
    """A lone surrogate is valid JSON (`"\\ud800"`) but no text: stored, no export could write it as UTF-8.
    Every text field of every body is refused with 400 and nothing is written; a surrogate pair is a
    character, accepted."""
    refusals = [
        issue(series_api, "k1", ref="\ud800"),
        issue(series_api, "k2", ref="order \udfff 1"),
        series_api.post("/_series/invoices", headers={"Idempotency-Key": "k3"}, body='{"\\ud800": 1}'),
    ]
    issue(series_api, "k4", ref="order 4")
    items = series_api.items(SERIES_TABLE)
    void = {"series": "2026-27", "ticket": 1, "reason": "\udfff"}
    refusals.append(series_api.post("/_series/invoices/void", body=json.dumps(void)))
    refusals.append(series_api.post("/_series/invoices/void", body=json.dumps({**void, "series": "2026\ud800"})))
    refusals.append(series_api.post("/orders", body='{"key": "orders", "\\udfff": 1}'))
    assert [answer.status for answer in refusals] == [400] * 6, [answer.body for answer in refusals]
    assert all("not valid Unicode" in answer.body["message"] for answer in refusals)
    assert series_api.items(SERIES_TABLE) == items  # nothing written by a refusal
    emoji = issue(series_api, "k5", ref="order \U0001f600")  # sent as its escaped surrogate pair
    assert emoji.status == 200
    page = series_api.get("/_series/invoices/journal", query={"series": "2026-27"})
    assert page.body["entries"][-1]["ref"] == "order \U0001f600"


def strict_admin(tmp_path, endpoint: str, *args: str) -> tuple[int, bytes, str]:
    """`python -m tickets_admin ...` writing to a UTF-8 stdout that fails on what UTF-8 cannot carry, as a
    real terminal or pipe does (a StringIO would take anything)."""
    config = write_cdk_json(tmp_path, CONFIG)
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        status = admin_main([*args, "--config", str(config), "--table", COUNTER_TABLE, "--endpoint-url", endpoint])
    return status, out.getvalue(), err.getvalue()


@pytest.mark.slow
def test_admin_commands_write_out_surrogates_stored_before(tmp_path):
    """What 0.2.0 accepted and stored (on dynalite; moto's put fails on it): a ref and a void reason with
    lone surrogates. The journal writes them out (JSON escapes in jsonl, which read back as stored;
    backslash escapes in csv), and the audit runs."""
    with running_dynalite() as endpoint:
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        client.create_table(**create_series_table_arguments(SERIES_TABLE))
        void = {"voidedBy": {"S": CALLER}, "voidedAt": {"S": "2026-11-24T12:00:01.000Z"}, "voidReason": {"S": "\udfff"}}
        for n, ref in ((1, "order 1"), (2, "order \ud800 2")):
            entry = Entry("invoices", "2026-27", n, "2026-11-24T12:00:00.000Z", CALLER, f"k{n}", ref)
            client.put_item(TableName=SERIES_TABLE, Item={**entry.to_item(), **(void if n == 2 else {})})

        status, out, err = strict_admin(tmp_path, endpoint, "journal", "invoices")
        assert (status, err) == (0, "")
        lines = out.decode("utf-8").splitlines()
        stored = json.loads(lines[1])
        assert stored["ref"] == "order \ud800 2" and stored["voided"]["reason"] == "\udfff"
        assert '"order \\ud800 2"' in lines[1]

        status, out, err = strict_admin(tmp_path, endpoint, "journal", "invoices", "--format", "csv")
        assert (status, err) == (0, "")
        row = out.decode("utf-8").splitlines()[2]
        assert ",order \\ud800 2," in row and row.endswith(",\\udfff")

        status, out, err = strict_admin(tmp_path, endpoint, "audit", "invoices")
        assert (status, err) == (0, "") and b"audit: clean" in out


LAMBDA_RESPONSE_BYTES = 6 * 1024 * 1024  # a Lambda function's response payload limit (synchronous invocation)


@pytest.mark.slow
def test_a_journal_page_of_the_largest_entries_fits_a_lambda_response(deploy, clock, moto_budget):
    """The largest entries the service accepts: a 100-character key, a 200-character format, the longest
    Idempotency-Key, caller, ref and void reason, in the characters that escape longest. A limit=500 page
    stops before Lambda's 6 MB, however the runtime escapes the body again, and says where the next starts."""
    key = "k" * 100
    format_text = "{key}" + '"' * (200 - len("{key}{n}")) + "{n}"  # 200 characters, each quote escaped twice
    api = with_series(deploy({**CONFIG, "series": {key: {"format": format_text}}}), clock)
    config = api.settings.series[key]
    caller_arn = "arn:aws:iam::123456789012:user/" + '"' * 512 + "/" + "u" * 64  # IAM allows " in a path
    widest = "\U0001f600"  # 4 bytes of UTF-8, 12 as JSON's \\ud83d\\ude00, 14 escaped again
    void = {"voidedBy": {"S": caller_arn}, "voidedAt": {"S": "2026-11-24T12:00:00.000Z"}}
    for n in range(1, 601):
        idempotency_key = f"{n}".ljust(128, '"')
        entry = Entry(key, "all", n, "2026-11-24T12:00:00.000Z", caller_arn, idempotency_key, widest * 128)
        entry = dataclasses.replace(entry, id=config.render_id(key, "all", n))
        item = {**entry.to_item(), **void, "voidReason": {"S": widest * 500}}
        api.client.put_item(TableName=SERIES_TABLE, Item=item)
    tickets: list[int] = []
    lengths: list[int] = []
    after = None
    while True:
        query = {"series": "all", "limit": "500", **({} if after is None else {"after": str(after)})}
        event = function_url_event(f"/_series/{key}/journal", "GET", query=query)
        result = api.handler.lambda_handler(event, FakeLambdaContext())
        for escaped in (True, False):  # the runtime may escape non-ASCII in its answer or not
            size = len(json.dumps(result, ensure_ascii=escaped).encode("utf-8"))
            assert size <= LAMBDA_RESPONSE_BYTES, f"page {len(lengths) + 1}: {size} bytes"
        page = json.loads(result["body"])
        tickets += [entry["ticket"] for entry in page["entries"]]
        lengths.append(len(page["entries"]))
        after = page["next"]
        if after is None:
            break
        assert after == tickets[-1]
    assert tickets == list(range(1, 601))
    assert 1 <= lengths[0] < 500 and len(lengths) == 2, lengths  # 500 of these entries do not fit one page
