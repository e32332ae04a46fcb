"""Series on the deploy side: the ledger keeps every series, field by field, for good."""

from __future__ import annotations

import pytest

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
