"""The audit line (tickets.log_format.AuditLine) prints what Powertools' `logger.info` prints,
character for character: same fields, same order, same values, same JSON."""

from __future__ import annotations

import decimal
import io
import itertools
import json
import time

import pytest
from aws_lambda_powertools import Logger

from tickets.log_format import AuditLine

NOW_NS = 1_700_000_000_123_456_789
_services = itertools.count()


@pytest.fixture
def frozen_time(monkeypatch):
    monkeypatch.setattr(time, "time_ns", lambda: NOW_NS)
    monkeypatch.setattr(time, "time", lambda: NOW_NS / 1e9)


def powertools_logger(**options) -> tuple[Logger, io.StringIO]:
    """A logger of its own (Powertools keeps one per service name in the process), set up as a
    function's is during an invocation."""
    stream = io.StringIO()
    logger = Logger(
        service=f"audit-test-{next(_services)}", level="INFO", logger_handler=None, stream=stream, **options
    )
    logger.append_keys(
        cold_start=False,
        function_name="tickets",
        function_memory_size=256,
        function_arn="arn:aws:lambda:us-east-1:123456789012:function:tickets",
        function_request_id="8f5c-4d21",
        correlation_id="req-1",
        key="orders",
        count=3,
    )
    return logger, stream


def both_lines(logger: Logger, stream: io.StringIO, **fields) -> tuple[str, str]:
    audit = AuditLine(logger, "issued")
    lines = []
    for emit in (lambda: audit.emit(**fields), lambda: logger.info("issued", extra=fields)):  # one line: one location
        stream.seek(0)
        stream.truncate()
        emit()
        lines.append(stream.getvalue())
    return lines[0], lines[1]


FIELDS = {
    "tickets": {"first_ticket": 5000, "last_ticket": 5002},
    "none-dropped": {"first_ticket": 5000, "last_ticket": None},
    "not-json-types": {"first_ticket": decimal.Decimal("5000"), "when": object()},
    "unicode": {"first_ticket": 1, "note": "ünïcødé ✓"},
    "named-like-powertools-keys": {"key": "invoices", "xray_trace_id": "mine", "stack_trace": "x"},
}


@pytest.mark.parametrize("fields", FIELDS.values(), ids=FIELDS.keys())
def test_the_audit_line_is_the_line_logger_info_prints(frozen_time, fields):
    audit, info = both_lines(*powertools_logger(), **fields)
    assert audit == info
    assert json.loads(audit)["message"] == "issued"


@pytest.mark.parametrize(
    "options",
    [{"utc": True}, {"use_rfc3339": True}, {"datefmt": "%H:%M:%S"}, {"xray_trace_id": None}],
    ids=["utc", "rfc3339", "datefmt", "no-xray"],
)
def test_the_same_line_with_other_powertools_options(frozen_time, monkeypatch, options):
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
    logger, stream = powertools_logger(**options)
    audit, info = both_lines(logger, stream, first_ticket=1, last_ticket=2)
    assert audit == info


def test_the_x_ray_trace_id_is_logged_as_powertools_logs_it(frozen_time, monkeypatch):
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
    audit, info = both_lines(*powertools_logger(), first_ticket=1)
    assert audit == info
    assert json.loads(audit)["xray_trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"


def test_keys_the_shortcut_does_not_fill_go_through_logging(frozen_time):
    logger, stream = powertools_logger()
    logger.append_keys(process_id="%(process)d")  # not a reserved name: a plain value
    logger.append_keys(thread="%(thread)d")  # a reserved name: a template only logging can fill
    audit, info = both_lines(logger, stream, first_ticket=1)
    assert audit == info
    assert json.loads(audit)["process_id"] == "%(process)d"
    logger.thread_safe_append_keys(tenant="t-1")
    audit, info = both_lines(logger, stream, first_ticket=1)
    assert audit == info and json.loads(audit)["tenant"] == "t-1"


@pytest.mark.parametrize("name", ["message", "asctime", "process", "lineno"])
def test_a_field_named_like_a_record_attribute_is_refused_as_logging_refuses_it(name):
    logger, stream = powertools_logger()
    with pytest.raises(KeyError, match=name):
        logger.info("issued", extra={name: 1})
    with pytest.raises(KeyError, match=name):
        AuditLine(logger, "issued").emit(**{name: 1})
    assert stream.getvalue() == ""


def test_nothing_is_printed_when_info_is_off():
    logger, stream = powertools_logger()
    logger.setLevel("WARNING")
    AuditLine(logger, "issued").emit(first_ticket=1)
    assert stream.getvalue() == ""


def test_a_message_that_looks_like_json_is_refused():
    with pytest.raises(ValueError):
        AuditLine(powertools_logger()[0], '{"issued": 1}')
