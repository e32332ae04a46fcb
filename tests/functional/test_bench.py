"""The benchmark's own machinery (bench/), on a small scale: what it counts must be true.

No timing here: performance figures come from `make bench`, never from tests.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from bench import cold_start, local, readme, report, user_suite
from bench.__main__ import DURATION
from bench.child import run_in_child
from bench.environment import (
    COUNTER_TABLE,
    EVENT,
    IDEMPOTENCY_TABLE,
    POWERTOOLS_AS_DEPLOYED,
    handler_env,
    lambda_context,
)
from tickets.tables import COUNTER_KEY, IDEMPOTENCY_KEY, create_table_arguments
from tickets_cdk.asset import asset_contents
from tickets_client.lease import TicketLease
from tickets_local.events import event_from


@pytest.fixture(autouse=True)
def suite_log_level(monkeypatch):
    """Powertools fixes a logger's level when the process first creates it: keep the suite's."""
    monkeypatch.setitem(POWERTOOLS_AS_DEPLOYED, "POWERTOOLS_LOG_LEVEL", os.environ["POWERTOOLS_LOG_LEVEL"])


def test_baseline_handler_issues_increasing_tickets_on_moto_with_one_write_each(monkeypatch):
    """Tickets' own writes per request: tests/functional/test_writes_per_ticket.py."""
    for name, value in handler_env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        client = boto3.client("dynamodb")
        for table, key in ((COUNTER_TABLE, COUNTER_KEY), (IDEMPOTENCY_TABLE, IDEMPOTENCY_KEY)):
            client.create_table(**create_table_arguments(table, key))
        baseline = importlib.import_module("bench.baseline")
        calls: list[str] = []
        baseline.table.meta.client.meta.events.register(
            "provide-client-params.dynamodb", lambda model, **_: calls.append(model.name)
        )
        answers = [
            baseline.lambda_handler(event_from(EVENT, path), lambda_context())
            for path in ("/orders", "/orders", "/invoices", "/orders")
        ]
        item = boto3.client("dynamodb").get_item(TableName=COUNTER_TABLE, Key={"counter": {"S": "orders"}})["Item"]

    assert [answer["statusCode"] for answer in answers] == [200] * 4
    assert [json.loads(answer["body"]) for answer in answers] == [
        {"key": "orders", "ticket": 1},
        {"key": "orders", "ticket": 2},
        {"key": "invoices", "ticket": 1},
        {"key": "orders", "ticket": 3},
    ]
    assert item["last"] == {"N": "3"}
    assert calls == ["UpdateItem"] * 4


def test_package_is_the_asset_cdk_would_zip(tmp_path):
    files = asset_contents()

    assert "tickets/handler.py" in files
    assert not [name for name in files if "__pycache__" in name or name.endswith(".pyc")]
    assert 0 < cold_start.package_size()["package_bytes"] < sum(len(content) for content in files.values())
    root = cold_start.build_task_root(tmp_path)  # what the cold start imports: the same files, the same bytes
    assert {name: (root / name).read_bytes() for name in files} == files


def test_the_lease_drain_checks_every_ticket_and_counts_them():
    drained = local._drain(TicketLease(local._InstantBlocks(), "k"), seconds=0.05)
    assert drained.taken > 0 and drained.taken % local._CHUNK == 0
    assert drained.next_ticket == drained.taken + 1  # every ticket from 1 on, consecutive

    class Skipping(local._InstantBlocks):
        def block(self, key, count, *, idempotent=True):
            self._last += 1  # leaves a gap before every block
            return super().block(key, count, idempotent=idempotent)

    with pytest.raises(AssertionError, match="skipped"):
        local._drain(TicketLease(Skipping(), "k", block_size=10), seconds=0.05)


@pytest.mark.slow
def test_the_test_kit_figures_check_each_ticket_and_time_the_user_suite_through_the_plugin():
    """bench/local.py's test-kit phase on a small scale: the bare server answers, every reset is checked by the
    first ticket after it, and the user suite runs through the plugin, against the bare server and on
    pytest-httpserver (each of its tests checks its first ticket: a suite that failed gives no figures)."""
    figures = local.measure_test_kit(keep_alive_requests=local._ROUND, user_suite_tests=3, resets=2, user_suite_runs=1)
    assert figures["keep_alive_requests"] == local._ROUND
    assert figures["keep_alive_ratio"] == figures["keep_alive_p50_ms"] / figures["bare_get_p50_ms"]
    assert figures["user_suite_tests"] == 3 and figures["user_suite_tests_per_s"] == 1 / figures["user_suite_s"]
    assert figures["user_suite_start_s"] > 0 and figures["user_suite_stop_s"] > 0  # apart from the rate
    assert figures["user_suite_runs"] == [round(figures["user_suite_tests_per_s"])]
    assert 0 < figures["reset_call_p50_ms"] < figures["reset_next_p50_ms"]
    assert figures["reset_p50_ms"] == figures["reset_next_p50_ms"] - figures["reset_alone_p50_ms"]
    assert figures["user_suite_bare_tests_per_s"] > 0 and figures["user_suite_httpserver_tests_per_s"] > 0


@pytest.mark.slow
def test_a_user_suite_run_that_ran_another_suite_than_asked_gives_no_figures(monkeypatch):
    """Each run says which of bench/user_suite.py's suites ran: pytest-httpserver's asked for, and the plugin's run
    (its variable not reaching the run, here renamed on the way), is refused rather than reported as the stub's."""
    monkeypatch.setattr(user_suite, "SUITE_HTTPSERVER", "TICKETS_BENCH_SUITE_NOT_READ")
    with pytest.raises(AssertionError, match="ran another suite than the httpserver one asked for"):
        local._user_suite(3, stub=True)


def test_the_opaque_figures_come_from_answers_checked_against_the_counters_key():
    """bench/opaque.py on a small scale (no timing): every handler answers, every answer is checked (the ids against
    the ones the key makes), and what the ids add is each median over the plain counter's."""
    figures = run_in_child("bench.opaque", rounds=1, calls=2, list_calls=1, filled=10)
    us = figures["opaque_us"]
    assert (us["calls_each"], us["list_calls_each"], us["list"], figures["opaque_filled"]) == (2, 1, 1000, 10)
    assert figures["opaque_added_one"] == us["opaque_one"] / us["plain_one"] - 1
    assert figures["opaque_added_list"] == us["opaque_list"] / us["plain_list"] - 1
    assert figures["opaque_ratios"]["opaque_list"] == us["opaque_list"] / us["baseline"]
    assert 0 < figures["opaque_one_pass_us"] < us["opaque_list"]


def test_the_readme_table_marks_each_goal_and_names_the_run():
    table = report.markdown_table(SAMPLE_RESULTS)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 13
    assert "| 1.05 (305 ms vs 290 ms; SSM's own latency not included) | ≤ 1.10 ✓ |" in next(
        row for row in rows if "with access rules" in row
    )
    assert "| ≥ 1,000,000 ✗ **missed** |" in next(row for row in rows if "block lease against" in row)
    assert "| ≤ 1.15 ✗ **missed** |" in next(row for row in rows if "warm call" in row)
    keep_alive = next(row for row in rows if "keep-alive connection" in row)
    assert (
        "| 6.0 (0.90 ms vs 0.15 ms; p99 16.0 ms; without an Idempotency-Key: p50 0.60 ms) | ≤ 5 ✗ **missed** |"
        in keep_alive
    )
    assert (
        "| 0.40 ms (reset() 0.010 ms, a mark the server reads; the next() after it 1.30 ms, without a reset 0.90 ms) "
        "| ≤ 1 ms ✓ |" in next(row for row in rows if "reset()" in row)
    )
    assert (
        "| 520 tests/s, the median of runs at 480, 520, 560 (the same tests against the bare server: 900/s; on "
        "pytest-httpserver, each test declaring its answer: 450/s; apart, the first test, with the server's start: "
        "0.50 s, and the last, with its stop: 0.10 s) | ≥ 500 tests/s ✓ |" in table
    )
    assert "1,000 x1, 2,000 x1, 1,000,000 x7; settled at 1,000,000; 1,500,000 unused" in table
    one_id = next(row for row in rows if row.startswith("| opaque counter's warm call, one id"))
    assert one_id.endswith(
        "| +4.0% (260 µs vs 250 µs; / baseline: 1.04 vs 1.00; a young function's, its tables empty: +12.0%) | ≤ +5% ✓ |"
    )
    assert (
        "| +700% (3,200 µs vs 400 µs: 2.80 µs an id; median of 100 calls each; 5% is 20 µs, and one pass of an add "
        "and a modulo over 1,000 tickets takes Python 49 µs: an id takes ten) | ≤ +5% ✗ **missed** |" in table
    )
    assert table.endswith("One `make bench` run: 131 s on 2 CPUs, Python 3.11.7, load average 0.4 at the start.\n")


def test_the_bench_report_gets_the_new_table_between_its_markers_and_nothing_else_changes():
    old = f"# T\n\nbefore\n{readme.START}\n| old |\n{readme.END}\nafter\n"
    new = readme.splice(old, "| new |\n| row |\n")
    assert new == f"# T\n\nbefore\n{readme.START}\n| new |\n| row |\n{readme.END}\nafter\n"
    with pytest.raises(ValueError, match="markers"):
        readme.splice("# no markers\n", "| new |")
    assert Path(__file__).resolve().parents[2] / "bench" / "README.md" == readme.REPORT
    report_text = readme.REPORT.read_text(encoding="utf-8")
    assert report_text.count(readme.START) == 1 and report_text.count(readme.END) == 1


def test_the_bench_duration_is_stated_the_same_in_help_and_the_report():
    repo = Path(__file__).resolve().parents[2]
    help_text = subprocess.run(
        [sys.executable, "-m", "bench", "--help"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert DURATION in " ".join(help_text.split())
    assert DURATION in (repo / "bench" / "README.md").read_text(encoding="utf-8")


SAMPLE_RESULTS = {
    "machine": {"python": "3.11.7", "cpus": 2, "load_average_at_start": [0.4, 0.5, 0.6]},
    "seconds": 131.2,
    "cold_start_ratio": 1.1,
    "cold_start_ms": {"tickets": 290, "baseline": 260, "samples": 15},
    "cold_start_rules_ratio": 1.05,
    "cold_start_rules_ms": {"with_rules": 305, "principals": 50},
    "warm_ratio": 1.45,
    "warm_us": {"tickets": 400, "baseline": 276, "calls_each": 4000},
    "lease_tickets_per_s": 900_000.0,
    "lease_seconds": 5.0,
    "lease_warm_up_seconds": 2.0,
    "lease_warm_up_tickets_per_s": 500_000.0,
    "lease_start_block": 1000,
    "lease_block_size_settled": 1_000_000,
    "lease_block_sizes": {"1000": 1, "2000": 1, "1000000": 7},
    "lease_unused_at_close": 1_500_000,
    "lease_handout_ceiling_per_s": 4_000_000.0,
    "lease_block_request_ms": 60.0,
    "lease_block_request_count": 1_000_000,
    "per_request_tickets_per_s": 20.0,
    "package_bytes": 21_000,
    "package_files": 13,
    "keep_alive_requests": 600,
    "keep_alive_p50_ms": 0.9,
    "keep_alive_p99_ms": 16.0,
    "keep_alive_unkeyed_p50_ms": 0.6,
    "bare_get_p50_ms": 0.15,
    "keep_alive_ratio": 6.0,
    "reset_p50_ms": 0.4,
    "reset_call_p50_ms": 0.01,
    "reset_next_p50_ms": 1.3,
    "reset_alone_p50_ms": 0.9,
    "user_suite_tests": 500,
    "user_suite_s": 0.96,
    "user_suite_start_s": 0.5,
    "user_suite_stop_s": 0.1,
    "user_suite_tests_per_s": 520.0,
    "user_suite_runs": [480, 520, 560],
    "user_suite_bare_tests_per_s": 900.0,
    "user_suite_httpserver_tests_per_s": 450.0,
    "opaque_us": {
        "baseline": 250.0,
        "plain_one": 250.0,
        "opaque_one": 260.0,
        "plain_list": 400.0,
        "opaque_list": 3200.0,
        "list": 1000,
        "list_calls_each": 100,
    },
    "opaque_ratios": {"plain_one": 1.0, "opaque_one": 1.04},
    "opaque_added_one": 0.04,
    "opaque_added_one_young": 0.12,
    "opaque_added_list": 7.0,
    "opaque_one_pass_us": 48.6,
}
