"""DynamoDB faults: throttling and timeouts become 503 with Retry-After and no ticket; a write
whose answer was lost leaves a gap, never a duplicate; anything else is a 500 without a trace."""

from __future__ import annotations

import json
import types

import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
    SSLError,
)
from botocore.stub import Stubber
from moto.core.botocore_stubber import MockRawResponse
from moto.core.models import botocore_stubber as moto_dynamodb

from moto_deployment import COUNTER_TABLE
from tickets import timing
from tickets.dynamodb_errors import THROTTLING_CODES

ENDPOINT = "https://dynamodb.us-east-1.amazonaws.com"


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "simulated"}}, "UpdateItem")


TRANSIENT = {
    "throughput": client_error("ProvisionedThroughputExceededException"),
    "throttling": client_error("ThrottlingException"),
    "request-limit": client_error("RequestLimitExceeded"),
    "internal": client_error("InternalServerError"),
    "read-timeout": ReadTimeoutError(endpoint_url=ENDPOINT),
    "connect-timeout": ConnectTimeoutError(endpoint_url=ENDPOINT),
    "no-connection": EndpointConnectionError(endpoint_url=ENDPOINT),
    "connection-closed": ConnectionClosedError(endpoint_url=ENDPOINT),
    "http-client": HTTPClientError(error="connection reset"),
    "ssl": SSLError(endpoint_url=ENDPOINT, error="handshake"),
    "5xx-internal-failure": ClientError(
        {"Error": {"Code": "InternalFailure", "Message": "simulated"}, "ResponseMetadata": {"HTTPStatusCode": 500}},
        "UpdateItem",
    ),
}


def assert_unavailable(answer) -> None:
    assert answer.status == 503, answer
    assert answer.body["error"] == "unavailable" and set(answer.body) == {"error", "message"}
    assert int(answer.headers["Retry-After"]) >= 1
    assert answer.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("failure", TRANSIENT.values(), ids=TRANSIENT.keys())
def test_a_transient_failure_is_503_with_retry_after_and_no_ticket(api, monkeypatch, failure):
    api.get("/orders")
    before = api.items()

    def fail(**_):
        raise failure

    monkeypatch.setattr(api.handler.dynamodb, "update_item", fail)
    answer = api.get("/orders", query={"count": "5"})
    assert_unavailable(answer)
    assert_unavailable(api.get("/orders", headers={"accept": "text/plain"}))
    assert api.items() == before
    # Only a throttled write was surely not applied; a fault or no answer may hide one that was.
    refused = isinstance(failure, ClientError) and failure.response["Error"]["Code"] in THROTTLING_CODES
    promise = "nothing was issued" in answer.body["message"]
    assert promise == refused, answer.body
    assert refused or "the write may have been applied: its tickets are then a gap" in answer.body["message"]


def test_throttling_from_a_stubbed_client_is_503(api):
    with Stubber(api.handler.dynamodb) as stub:
        stub.add_client_error(
            "update_item", service_error_code="ProvisionedThroughputExceededException", http_status_code=400
        )
        assert_unavailable(api.get("/orders"))
        stub.assert_no_pending_responses()
    assert api.items() == []


def test_a_missing_table_is_a_500_that_explains_nothing_it_should_not(api):
    assert api.handler.dynamodb is not None  # the function exists; then its table is deleted under it
    api.client.delete_table(TableName=COUNTER_TABLE)
    answer = api.get("/orders")
    assert answer.status == 500
    assert answer.headers["Cache-Control"] == "no-store"
    assert set(answer.body) == {"error", "message"} and answer.body["error"] == "internal_error"
    text = json.dumps(answer.body)
    assert "Traceback" not in text and "ResourceNotFound" not in text and COUNTER_TABLE not in text


def test_a_bug_is_a_500_json_answer(api, monkeypatch):
    def broken(**_):
        raise KeyError("Attributes")

    monkeypatch.setattr(api.handler.dynamodb, "update_item", broken)
    answer = api.get("/orders")
    assert answer.status == 500 and answer.body["error"] == "internal_error"
    assert "Traceback" not in answer.body["message"] and "KeyError" not in answer.body["message"]
    assert "may have been spent" in answer.body["message"] and "nothing was handed out" not in answer.body["message"]


def test_a_write_whose_answer_was_lost_leaves_a_gap_never_a_duplicate(api, monkeypatch):
    assert api.get("/orders").body["ticket"] == 5000
    real_update = api.handler.dynamodb.update_item

    def written_then_lost(**request):
        real_update(**request)
        raise ReadTimeoutError(endpoint_url=ENDPOINT)

    monkeypatch.setattr(api.handler.dynamodb, "update_item", written_then_lost)
    lost = api.get("/orders", query={"count": "3"})
    assert_unavailable(lost)
    assert "the write may have been applied: its tickets are then a gap" in lost.body["message"]
    burnt_to = int(api.items()[0]["last"]["N"])
    assert burnt_to == 5003  # the block 5001..5003 was written, and nobody will ever get it

    monkeypatch.setattr(api.handler.dynamodb, "update_item", real_update)
    assert api.get("/orders", query={"count": "2"}).body["tickets"] == [5004, 5005]


def test_a_lost_write_is_not_retried_by_the_sdk_the_callers_retry_gets_the_next_block(api):
    """The write reaches DynamoDB, the answer times out: botocore makes no second attempt (timing.py:
    the caller's client is the one layer that retries), the caller gets a 503, and its retry the next
    block; the first is a gap."""
    api.get("/orders")
    lost = []

    def write_then_time_out(request, event_name, **_):
        lost.append(moto_dynamodb(event_name=event_name, request=request))  # DynamoDB applies it
        raise ReadTimeoutError(endpoint_url=request.url)

    api.handler.dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", write_then_time_out)
    try:
        assert_unavailable(api.get("/orders", query={"count": "2"}))
    finally:
        api.handler.dynamodb.meta.events.unregister("before-send.dynamodb.UpdateItem", write_then_time_out)
    assert len(lost) == 1  # one attempt
    assert api.get("/orders", query={"count": "2"}).body["tickets"] == [5003, 5004]  # 5001, 5002: the gap


def test_throttling_is_a_503_after_one_attempt(api, monkeypatch):
    """Through botocore's real retry loop: DynamoDB answers with a throttle, and botocore does not
    try again (the caller's client does, after Retry-After)."""
    attempts = []

    def throttled(request, **_):
        attempts.append(request.url)
        return AWSResponse(
            request.url,
            400,
            {},
            MockRawResponse(
                json.dumps(
                    {
                        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                        "message": "simulated",
                    }
                ).encode()
            ),
        )

    delays = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=delays.append))
    api.handler.dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", throttled)
    try:
        # botocore calls every before-send handler: without this moto would apply the write too.
        with monkeypatch.context() as moto_off:
            moto_off.setattr(moto_dynamodb, "enabled", False)
            assert_unavailable(api.get("/orders"))
    finally:
        api.handler.dynamodb.meta.events.unregister("before-send.dynamodb.UpdateItem", throttled)
    assert len(attempts) == timing.DYNAMODB_MAX_ATTEMPTS == 1
    assert delays == []
    assert api.items() == []


def test_the_client_config_is_bounded(api):
    config = api.handler.dynamodb.meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": timing.DYNAMODB_MAX_ATTEMPTS}
    assert (config.connect_timeout, config.read_timeout) == (
        timing.DYNAMODB_CONNECT_TIMEOUT_SECONDS,
        timing.DYNAMODB_READ_TIMEOUT_SECONDS,
    )
    assert config.connect_timeout + config.read_timeout == timing.WORST_CASE_CALL_SECONDS


class EndlessRaces:
    """A counter table where shard 0 is throttled and, on shard 1, every conditional write loses to
    another request: the shard's item is missing when its advance fails and when it is read, and
    present when this request creates it. Records the item key of every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def update_item(self, **request):
        self.calls.append(request["Key"]["counter"]["S"])
        if request["Key"]["counter"]["S"] == "hot#0":
            raise client_error("ProvisionedThroughputExceededException")
        if request["Key"]["counter"]["S"] == "hot":
            return {}  # the layout on the plain item: recorded
        raise client_error("ConditionalCheckFailedException")  # no item: DynamoDB returns none

    def batch_get_item(self, RequestItems):
        self.calls.extend(key["counter"]["S"] for request in RequestItems.values() for key in request["Keys"])
        return {"Responses": {}}


def test_a_request_that_meets_endless_races_ends_in_a_503_after_a_bounded_number_of_calls():
    """Races are bounded by the store's and the issuer's own rounds, not by a count of calls."""
    from tickets.errors import Unavailable
    from tickets.issuer import Issuer
    from tickets.protocol import Asked
    from tickets.settings import CounterConfig, Settings
    from tickets.store import CounterStore

    table = EndlessRaces()
    issuer = Issuer(
        Settings(counters={"hot": CounterConfig(shards=2)}),
        CounterStore(table, COUNTER_TABLE),
        shuffle=lambda lanes: lanes.sort(key=lambda lane: lane.shard),
    )
    with pytest.raises(Unavailable):
        issuer.issue(Asked("hot", 1))
    assert table.calls[0] == "hot#0" and set(table.calls[1:]) <= {"hot", "hot#1"}
    # the throttled shard, then three rounds on the other: advance, read, layout, creation
    assert table.calls == ["hot#0"] + ["hot#1", "hot#1", "hot", "hot#1"] * 3


def test_the_function_timeout_leaves_the_deadline_room():
    assert timing.REQUEST_BUDGET_SECONDS >= 3 * timing.WORST_CASE_CALL_SECONDS  # an idempotent request's calls
    assert timing.REQUEST_BUDGET_SECONDS + timing.RENDER_MARGIN_SECONDS < timing.FUNCTION_TIMEOUT_SECONDS <= 15
