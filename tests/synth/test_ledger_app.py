"""The deployment ledger through app.py's entry point (tests/unit/test_ledger.py has its rules): the app
refuses what the ledger refuses before it synthesises, on a temporary directory, and finds the
ledger beside cdk.json wherever it runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ledger_examples import MAIN, MERGED, PR_A, PR_B, on, one_service
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import (
    SYNTHESIS_REFUSED,
    LedgerFile,
    init_ledger,
    ledger_path_beside,
    read_ledger,
    read_ledger_file,
    record,
    write_ledger_file,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_ledger_is_found_beside_cdk_json_and_app_py_wherever_the_command_runs(monkeypatch, tmp_path):
    """app.py imported in a process started in another directory still names the repository's ledger."""
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", "import app; print(app.LEDGER_PATH)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()) == ROOT / "tickets.lock.json"
    monkeypatch.chdir(tmp_path)
    assert ledger_path_beside(Path("cdk.json")) == tmp_path / "tickets.lock.json"


@pytest.fixture
def app_module():
    import app

    return app


def _cdk_app(tickets: dict, outdir: Path):
    from aws_cdk import App

    return App(context={"tickets": tickets}, outdir=str(outdir))


@pytest.mark.slow
def test_app_without_a_ledger_stops_naming_make_init_then_records_then_refuses(app_module, tmp_path, capsys):
    ledger_path = tmp_path / "tickets.lock.json"
    tickets = {"regions": {"us-east-1": 0}, "regionSlots": 1, "counters": {"orders": {"start": 5000}}}

    # A deleted ledger, or one looked for in the wrong place, is not taken for a new deployment.
    with pytest.raises(SystemExit) as stopped:
        app_module.main(_cdk_app(tickets, tmp_path / "none"), ledger_path)
    said = str(stopped.value.code)
    assert "no ledger" in said and "  make init " in said and "  python -m tickets_cdk init " in said
    # What the refusal says was not done is true of the assembly: no template, no ledger (staged assets may be).
    assert f"({SYNTHESIS_REFUSED})" in said.splitlines()[0]
    assert not list((tmp_path / "none").glob("*.template.json")) and not ledger_path.exists()

    init_ledger(ledger_path, parse_config(tickets))
    app_module.main(_cdk_app(tickets, tmp_path / "first"), ledger_path)
    (template,) = (tmp_path / "first").glob("*.template.json")
    written = ledger_path.read_text()
    # The stack records the version it was synthesised with, for make deploy to compare (predeploy.py).
    assert json.loads(template.read_text())["Outputs"]["TicketsLedgerVersion"]["Value"] == (
        read_ledger_file(ledger_path).version
    )
    assert read_ledger(ledger_path) == record(parse_config(tickets), None)

    # The first scenario: a second region by growing regionSlots.
    grown = {**tickets, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}
    with pytest.raises(SystemExit) as refused:
        app_module.main(_cdk_app(grown, tmp_path / "second"), ledger_path)
    assert refused.value.code != 0
    assert "refused by the deployment ledger" in str(refused.value.code)
    assert "regionSlots: the ledger records 1, cdk.json says 2." in str(refused.value.code)
    assert not list((tmp_path / "second").glob("*.template.json"))
    assert ledger_path.read_text() == written


@pytest.mark.slow
def test_app_records_the_account_and_says_a_new_accounts_tables_start_empty(app_module, tmp_path, capsys):
    ledger_path = tmp_path / "tickets.lock.json"
    tickets = {"regions": {"us-east-1": 0}, "counters": {"orders": {"start": 5000}}}
    init_ledger(ledger_path, parse_config(tickets))
    app_module.synthesize(_cdk_app(tickets, tmp_path / "production"), ledger_path, account="111111111111")
    assert read_ledger(ledger_path).slots[0].accounts == ("111111111111",)
    said = capsys.readouterr().err
    assert "us-east-1: account 111111111111 is new to the ledger, so its tables start empty" in said
    admin = ".venv/bin/python -m tickets_admin"  # commands an operator can paste: tickets_admin is on no PATH
    assert f"`{admin} export`" in said and f"`{admin} raise KEY --above N`" in said

    app_module.synthesize(_cdk_app(tickets, tmp_path / "again"), ledger_path, account="111111111111")
    assert capsys.readouterr().err == ""  # nothing new: nothing written, nothing said


def test_app_refuses_a_changed_counter_before_synthesising(app_module, tmp_path):
    ledger_path = tmp_path / "tickets.lock.json"
    tickets = {"regions": {"us-east-1": 0}, "counters": {"orders": {"start": 5000}}}
    write_ledger_file(ledger_path, one_service(record(parse_config(tickets), None)))
    before = ledger_path.read_bytes()
    changed = {**tickets, "counters": {"orders": {"start": 1}}}
    with pytest.raises(SystemExit) as refused:
        app_module.main(_cdk_app(changed, tmp_path / "out"), ledger_path)
    assert "counters.orders.start: the ledger records 5000, cdk.json says 1." in str(refused.value.code)
    assert ledger_path.read_bytes() == before
    assert not list((tmp_path / "out").glob("*.template.json"))


def test_app_refuses_a_forked_ledger_before_synthesising(app_module, tmp_path):
    """Two branches' versions kept by a merge: synthesis stops with the way out and writes nothing."""
    main = on(MAIN, None, "make init")
    a, b = on(PR_A, main), on(PR_B, main)
    forked = LedgerFile(b.services, (*a.versions, b.versions[-1]))
    ledger_path = tmp_path / "tickets.lock.json"
    write_ledger_file(ledger_path, forked)
    before = ledger_path.read_bytes()
    with pytest.raises(SystemExit) as refused:
        app_module.main(_cdk_app(MERGED, tmp_path / "out"), ledger_path)
    message = str(refused.value.code)
    assert "refused by the deployment ledger" in message and f"are two children of {main.version}" in message
    assert "Re-record one change on top of the other" in message
    assert ledger_path.read_bytes() == before
    assert not list((tmp_path / "out").glob("*.template.json"))


def test_app_refuses_an_unsafe_json_number_as_cdk_passes_it(app_module, tmp_path):
    """The CDK CLI passes context through Node; so does App(context=...): the number arrives rounded."""
    ledger_path = tmp_path / "tickets.lock.json"
    init_ledger(ledger_path, parse_config({"regions": {"us-east-1": 0}}))
    before = ledger_path.read_bytes()
    tickets = {"regions": {"us-east-1": 0}, "counters": {"big": {"start": 36028797018963969}}}
    with pytest.raises(SystemExit) as refused:
        app_module.main(_cdk_app(tickets, tmp_path / "out"), ledger_path)
    message = str(refused.value.code)
    assert "tickets.counters.big.start" in message and "decimal string" in message
    assert "36028797018963970" in message  # what Node made of it
    assert ledger_path.read_bytes() == before
