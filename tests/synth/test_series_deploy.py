"""Series on the deploy side: the ledger keeps every series, field by field, for good."""

from __future__ import annotations

import json

import pytest

from tickets.settings import SERIES_TABLE_ENV, SETTINGS_ENV
from tickets_cdk.service import SERIES_ACTIONS
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import LedgerError, from_text, record_services, to_text

INVOICES = {"start": 1, "period": "yearly", "periodStartMonth": 4, "utcOffset": "+05:30", "format": "INV/{series}/{n}"}
BASE = {"regions": {"us-east-1": 0}, "tableName": "shop"}


def recorded(tickets: dict, previous=None):
    return record_services(previous, {"shop": parse_config(tickets)})


def test_the_ledger_records_every_field_of_every_series_and_reads_it_back():
    ledger = recorded({**BASE, "series": {"invoices": INVOICES}})
    fields = ledger.services["shop"].series["invoices"]
    assert fields == {**INVOICES, "max": 2**53 - 1}
    assert from_text(to_text(ledger)) == ledger
    assert '"series": {' in to_text(ledger) and ledger.versions[-1].change == "shop: recorded"
    added = recorded({**BASE, "series": {"invoices": INVOICES, "receipts": {}}}, ledger)
    assert added.versions[-1].change == "shop: series receipts added"


def test_a_ledger_without_series_is_written_and_hashed_as_before():
    ledger = recorded(BASE)
    assert "series" not in to_text(ledger)


@pytest.mark.parametrize(
    "series, refusal",
    [
        ({}, "series.invoices: the ledger records the series invoices"),
        ({"invoices": {**INVOICES, "start": 1000}}, "series.invoices.start: the ledger records 1, cdk.json says 1000"),
        ({"invoices": {**INVOICES, "periodStartMonth": 1}}, "series.invoices.periodStartMonth: the ledger records 4"),
        ({"invoices": {**INVOICES, "format": "F/{series}/{n}"}}, "series.invoices.format"),
        ({"invoices": {"start": 1}}, "series.invoices.period: the ledger records 'yearly', cdk.json says None"),
    ],
)
def test_a_series_is_never_removed_nor_changed(series, refusal):
    ledger = recorded({**BASE, "series": {"invoices": INVOICES}})
    with pytest.raises(LedgerError) as err:
        recorded({**BASE, "series": series}, ledger)
    assert refusal in str(err.value)


def test_a_damaged_series_record_is_refused():
    text = to_text(recorded({**BASE, "series": {"invoices": INVOICES}})).replace(
        '"utcOffset": "+05:30"', '"utcOffset": 5'
    )
    with pytest.raises(ValueError, match="utcOffset"):
        from_text(text)


# --- the stack (one synthesis of the reference app, as tests/synth/test_stack.py synthesises) ----------------

SERIES_CONFIG = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "series": {"invoices": INVOICES},
}


@pytest.fixture(scope="module")
def series_synthesis(tmp_path_factory):
    from test_stack import CDK_CONTEXT, Synthesised

    ledger = tmp_path_factory.mktemp("series-ledger") / "tickets.lock.json"
    return Synthesised(
        {**CDK_CONTEXT, "tickets": SERIES_CONFIG},
        tmp_path_factory.mktemp("series"),
        ledger,
        template_regions={"us-east-1"},
    )


@pytest.fixture(scope="module")
def series_stack(series_synthesis):
    return series_synthesis.template_json("us-east-1")


@pytest.mark.slow
def test_cfn_lint_and_cdk_nag_find_nothing_in_a_stack_with_series(series_synthesis):
    from linting import cfn_lint_errors

    from installed import validation_findings

    for region in series_synthesis.stacks:
        assert cfn_lint_errors(series_synthesis.template_json(region), region) == []
    assert validation_findings(series_synthesis.outdir) == []


@pytest.mark.slow
def test_the_series_table_is_stateful_and_named(series_stack):
    table = series_stack["Resources"]["ServiceSeriesTable"]
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")
    properties = table["Properties"]
    assert properties["TableName"] == "tickets-counters-series"
    assert properties["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "n", "KeyType": "RANGE"},
    ]
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["DeletionProtectionEnabled"] is True
    assert "TimeToLiveSpecification" not in properties  # a journal is kept for good


@pytest.mark.slow
def test_the_function_may_make_only_the_journals_calls_on_the_series_table(series_stack):
    resources = series_stack["Resources"]
    statements = [
        statement
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]
    on_series = [s for s in statements if "ServiceSeriesTable" in json.dumps(s["Resource"])]
    assert len(on_series) == 1
    assert sorted(on_series[0]["Action"]) == sorted(SERIES_ACTIONS)
    assert "dynamodb:Scan" not in json.dumps(statements)
    [function] = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    environment = function["Properties"]["Environment"]["Variables"]
    assert environment[SERIES_TABLE_ENV] == {"Ref": "ServiceSeriesTable"}
    assert json.loads(environment[SETTINGS_ENV])["series"]["invoices"]["format"] == "INV/{series}/{n}"


@pytest.mark.slow
def test_the_dashboard_graphs_issued_and_voided_per_series(series_stack):
    [dashboard] = [r for r in series_stack["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    body = json.dumps(dashboard["Properties"]["DashboardBody"]).replace("\\", "")  # unescaped, to read
    for metric in ("SeriesIssued", "SeriesVoided"):
        assert "SEARCH('{Tickets,key,series,service} MetricName=\"" + metric + '" service="tickets"' in body
