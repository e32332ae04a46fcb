"""The benchmark's own machinery (bench/), on a small scale: what it counts must be true.

No timing here: performance figures come from `make bench`, never from tests.
"""

from __future__ import annotations

import json

import os

import boto3
import pytest
from moto import mock_aws

from bench import ceiling, package, writes
from bench.environment import BASELINE_MODULE, COUNTER_TABLE, POWERTOOLS_AS_DEPLOYED, environment, fresh_import, \
    function_url_event, handler_env, lambda_context


@pytest.fixture(autouse=True)
def suite_log_level(monkeypatch):
    """Powertools fixes a logger's level when the process first creates it: keep the suite's."""
    monkeypatch.setitem(POWERTOOLS_AS_DEPLOYED, "POWERTOOLS_LOG_LEVEL", os.environ["POWERTOOLS_LOG_LEVEL"])


def test_counted_writes_per_ticket_are_one_per_request():
    figures = writes.measure(counts=(1, 10, 1000), requests=3, sharded_requests=8)

    assert figures["writes_per_ticket"] == {1: 1.0, 10: 1 / 10, 1000: 1 / 1000}
    assert figures["dynamodb_calls"]["tickets count=10"] == {"UpdateItem": 3}  # no reads, nothing else
    assert figures["baseline_writes_per_ticket"] == 1.0
    assert figures["sharded"]["writes_per_ticket"] == 1.0  # once its lanes' items exist
    assert figures["sharded"]["tickets"] == 8


def test_baseline_handler_issues_increasing_tickets_on_moto():
    with environment(handler_env()), mock_aws():
        writes._create_tables()
        baseline = fresh_import(BASELINE_MODULE)
        answers = [baseline.lambda_handler(function_url_event(path), lambda_context())
                   for path in ("/orders", "/orders", "/invoices", "/orders")]
        item = boto3.client("dynamodb").get_item(TableName=COUNTER_TABLE, Key={"counter": {"S": "orders"}})["Item"]

    assert [answer["statusCode"] for answer in answers] == [200] * 4
    assert [json.loads(answer["body"]) for answer in answers] == [
        {"key": "orders", "ticket": 1}, {"key": "orders", "ticket": 2},
        {"key": "invoices", "ticket": 1}, {"key": "orders", "ticket": 3}]
    assert item["last"] == {"N": "3"}


def test_per_key_ceiling_follows_the_counted_writes():
    result = ceiling.per_key_ceiling({1: 1.0, 1000: 0.001}, baseline_writes_per_ticket=1.0)

    assert result["seed"] == 1000
    assert result["tickets"][1] == {1: 1000, 1000: 1_000_000}
    assert result["tickets"][100] == {1: 100_000, 1000: 100_000_000}


def test_package_is_the_asset_cdk_would_zip():
    files = package.asset_files()

    assert "tickets/handler.py" in files
    assert not [name for name in files if "__pycache__" in name or name.endswith(".pyc")]
    assert 0 < package.measure()["package_bytes"] < sum(path.stat().st_size for path in files.values())
