"""One meaning per DynamoDB error code (lambda_src/tickets/dynamodb_errors.py), the same on each of its
users: the counter store, the series store and the idempotency store answer through the real handler
(503 `unavailable` with Retry-After, or a 500 `internal_error` that names nothing of the table), and
tickets_admin says the same in words (run it again, or what to check)."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from functional.series.test_series import CONFIG, NOW, Clock, with_series
from moto_deployment import COUNTER_TABLE, IDEMPOTENCY_TABLE
from tickets.dynamodb_errors import Failure, classify, classify_code
from tickets_admin.table import AdminError, CounterTable

# code: (HTTP status DynamoDB sends it with, what it means)
CODES = {
    "ProvisionedThroughputExceededException": (400, Failure.UNAVAILABLE),
    "ThrottlingException": (400, Failure.UNAVAILABLE),
    "RequestLimitExceeded": (400, Failure.UNAVAILABLE),
    "LimitExceededException": (400, Failure.UNAVAILABLE),
    "InternalServerError": (500, Failure.UNAVAILABLE),
    "ServiceUnavailable": (503, Failure.UNAVAILABLE),
    "InternalFailure": (500, Failure.UNAVAILABLE),  # any 5xx, whatever its code
    "AccessDeniedException": (400, Failure.ACCESS_DENIED),
    "UnrecognizedClientException": (400, Failure.ACCESS_DENIED),
    "ResourceNotFoundException": (400, Failure.MISSING_TABLE),
    "ValidationException": (400, Failure.INVALID_REQUEST),
    "ConditionalCheckFailedException": (400, Failure.CONDITION_FAILED),
}
# What the function answers for each meaning, on every route that calls DynamoDB.
STATUS = {
    Failure.UNAVAILABLE: 503,
    Failure.ACCESS_DENIED: 500,
    Failure.MISSING_TABLE: 500,
    Failure.INVALID_REQUEST: 500,
}
ANSWERED = {code: meaning for code, meaning in CODES.items() if meaning[1] is not Failure.CONDITION_FAILED}


def client_error(code: str, status: int, operation: str = "UpdateItem") -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "simulated"}, "ResponseMetadata": {"HTTPStatusCode": status}}, operation
    )


@pytest.mark.parametrize("code", CODES)
def test_each_code_has_one_meaning(code):
    status, meaning = CODES[code]
    assert classify_code(code, status) is meaning
    assert classify(client_error(code, status)) is meaning


def test_an_exception_that_is_not_dynamodbs_answer_is_none():
    assert classify(KeyError("Attributes")) is None


def assert_answer(answer, status: int) -> None:
    assert answer.status == status, answer
    assert answer.headers["Cache-Control"] == "no-store"
    if status == 503:
        assert answer.body["error"] == "unavailable" and int(answer.headers["Retry-After"]) >= 1
    else:
        assert answer.body["error"] == "internal_error" and "Retry-After" not in answer.headers
        text = json.dumps(answer.body)
        assert COUNTER_TABLE not in text and "Exception" not in text and "simulated" not in text


@pytest.mark.parametrize("code", ANSWERED)
def test_the_counter_store_answers_each_code_by_its_meaning(api, code):
    status, meaning = CODES[code]
    with Stubber(api.handler.dynamodb) as stub:
        stub.add_client_error("update_item", service_error_code=code, http_status_code=status)
        assert_answer(api.get("/orders"), STATUS[meaning])
        stub.assert_no_pending_responses()
    assert api.items() == []


@pytest.mark.parametrize("code", ANSWERED)
def test_the_counter_state_read_answers_each_code_by_its_meaning(api, code):
    status, meaning = CODES[code]
    with Stubber(api.handler.dynamodb) as stub:
        stub.add_client_error("batch_get_item", service_error_code=code, http_status_code=status)
        assert_answer(api.get("/_counters/orders"), STATUS[meaning])
        stub.assert_no_pending_responses()


@pytest.mark.parametrize("code", ANSWERED)
def test_the_series_store_answers_each_code_by_its_meaning(deploy, monkeypatch, code):
    """The series store once answered AccessDenied (and every refusal) with a 503; now as the counter store."""
    series_api = with_series(deploy(CONFIG), Clock(NOW))
    status, meaning = CODES[code]

    def fail(operation, _request):  # every call of the function's client, before it reaches moto
        raise client_error(code, status, operation)

    monkeypatch.setattr(series_api.handler.dynamodb, "_make_api_call", fail)
    issued = series_api.post("/_series/invoices", headers={"Idempotency-Key": "doc-1"})
    journal = series_api.get("/_series/invoices/journal", query={"series": "2026-27"})
    monkeypatch.undo()
    assert series_api.get("/_series/invoices/journal", query={"series": "2026-27"}).body["entries"] == []
    assert_answer(issued, STATUS[meaning])
    assert_answer(journal, STATUS[meaning])


@pytest.mark.parametrize("code", ANSWERED)
def test_the_idempotency_store_answers_each_code_by_its_meaning(api, monkeypatch, code):
    """Powertools' idempotency wraps every failure of its table in one exception; the function once
    answered all of them 503, an AccessDenied too. Now as the counter store: a misconfiguration is the
    500 the InternalErrors alarm watches, and nothing is issued either way."""
    status, meaning = CODES[code]
    make_api_call = api.handler.dynamodb._make_api_call

    def fail_on_the_idempotency_table(operation, request):
        if request.get("TableName") == IDEMPOTENCY_TABLE:
            raise client_error(code, status, operation)
        return make_api_call(operation, request)

    monkeypatch.setattr(api.handler.dynamodb, "_make_api_call", fail_on_the_idempotency_table)
    assert_answer(api.post("/orders", headers={"Idempotency-Key": "k-1"}), STATUS[meaning])
    monkeypatch.undo()
    assert api.items() == [] and api.items(IDEMPOTENCY_TABLE) == []
    assert api.post("/orders", headers={"Idempotency-Key": "k-1"}).body == {"key": "orders", "ticket": 5000}


ADMIN_SAYS = {
    Failure.UNAVAILABLE: (
        "DynamoDB throttled the table 'tickets-test' in us-east-1 beyond the retries, or was unavailable"
    ),
    Failure.ACCESS_DENIED: "DynamoDB denied a request to the table 'tickets-test' in us-east-1",
    Failure.MISSING_TABLE: "no table 'tickets-test' in us-east-1",
    Failure.INVALID_REQUEST: "DynamoDB refused a request to the table 'tickets-test' in us-east-1: ValidationException",
}


@pytest.mark.parametrize("code", ANSWERED)
def test_tickets_admin_says_each_code_by_its_meaning(aws, code):
    status, meaning = CODES[code]
    table = CounterTable(COUNTER_TABLE, "us-east-1")
    with Stubber(table.client) as stub:
        stub.add_client_error("scan", service_error_code=code, http_status_code=status)
        with pytest.raises(AdminError) as raised:
            list(table.scan())
    said = str(raised.value)
    assert said.startswith(ADMIN_SAYS[meaning]), said
    if meaning is Failure.ACCESS_DENIED:
        assert code in said


def test_tickets_admin_lets_a_failed_condition_through_to_its_caller(aws):
    table = CounterTable(COUNTER_TABLE, "us-east-1")
    with Stubber(table.client) as stub:
        stub.add_client_error("update_item", service_error_code="ConditionalCheckFailedException", http_status_code=400)
        written = {"UpdateExpression": "SET x = :x", "ExpressionAttributeValues": {":x": {"N": "1"}}}
        assert table.write("orders", written) is False
