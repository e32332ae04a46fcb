"""Idempotent retries (docs/explanation/failures-and-idempotency.md#idempotency): the same Idempotency-Key gets
the same answer and burns nothing."""

from __future__ import annotations

import contextlib
import copy
import json
import time

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from moto.core.models import botocore_stubber as moto_dynamodb

from moto_deployment import (
    COUNTER_TABLE,
    EVENT_TEMPLATE,
    IDEMPOTENCY_TABLE,
    FakeLambdaContext,
    function_url_event,
)
from tickets import timing

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)
MOTO_ONLY = {"test_a_lost_answer_to_the_lock_write_is_a_503_and_the_lock_ends_at_the_deadline"}  # moto's stubber


def once(key: str) -> dict:
    return {"idempotency-key": key}


def throttle(**_):
    raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}}, "op")


def test_a_repeat_gets_the_same_tickets_and_burns_none(api):
    first = api.post("/orders", query={"count": "3"}, headers=once("order-run-1"))
    assert first.body == {"key": "orders", "ticket": 5000, "tickets": [5000, 5001, 5002]}
    counters = api.items()
    assert api.post("/orders", query={"count": "3"}, headers=once("order-run-1")).body == first.body
    assert (
        api.post("/", query={"key": "orders"}, body='{"count": 3}', headers=once("order-run-1")).body == first.body
    )  # the same request, said another way
    text = api.post("/orders", query={"count": "3"}, headers={**once("order-run-1"), "accept": "text/plain"})
    assert text.body == "5000\n5001\n5002\n"
    assert api.items() == counters
    assert api.get("/orders", headers=once("order-run-2")).body["ticket"] == 5003
    assert api.get("/orders").body["ticket"] == 5004


@pytest.mark.parametrize(
    "other",
    [
        {"path": "/orders", "query": {"count": "2"}},
        {"path": "/invoices", "query": {"count": "3"}},
        {"path": "/", "query": {"count": "3"}},
    ],
    ids=["count", "key", "default-key"],
)
def test_the_same_header_for_another_request_is_422(api, other):
    first = api.post("/orders", query={"count": "3"}, headers=once("k1"))
    assert first.status == 200
    counters, records = api.items(), api.items(IDEMPOTENCY_TABLE)
    answer = api.post(**other, headers=once("k1"))
    assert answer.status == 422
    assert answer.body["error"] == "idempotency_key_reused" and set(answer.body) == {"error", "message"}
    assert answer.headers["Cache-Control"] == "no-store"
    assert (api.items(), api.items(IDEMPOTENCY_TABLE)) == (counters, records)


def test_a_duplicate_while_the_first_is_in_flight_is_409(api, monkeypatch):
    issue = api.handler.issuer.issue
    while_in_flight = []

    def slow_issue(asked):
        if not while_in_flight:  # the client gave up waiting and sent the request again
            while_in_flight.append(api.post("/orders", headers=once("slow")))
        return issue(asked)

    monkeypatch.setattr(api.handler.issuer, "issue", slow_issue)

    first = api.post("/orders", headers=once("slow"))
    [duplicate] = while_in_flight
    assert duplicate.status == 409 and duplicate.body["error"] == "in_progress"
    assert "ticket" not in duplicate.body
    assert first.body == {"key": "orders", "ticket": 5000}
    assert api.post("/orders", headers=once("slow")).body == first.body  # now it has its answer
    assert api.get("/orders").body["ticket"] == 5001


def test_no_header_no_idempotency_call(api, dynamodb_calls):
    assert api.get("/orders").status == 200
    assert api.post("/invoices", query={"count": "2"}).status == 200
    assert dynamodb_calls == [("UpdateItem", COUNTER_TABLE)] * 2
    assert api.items(IDEMPOTENCY_TABLE) == []


def test_with_a_header_the_idempotency_table_is_used(api, dynamodb_calls):
    assert api.get("/orders", headers=once("k")).status == 200
    assert ("UpdateItem", COUNTER_TABLE) in dynamodb_calls
    assert {table for _, table in dynamodb_calls} == {COUNTER_TABLE, IDEMPOTENCY_TABLE}
    assert len(api.items(IDEMPOTENCY_TABLE)) == 1


@pytest.mark.parametrize(
    "value", ["", "x" * 129, "naïve", "tab\there", "\x7f"], ids=["empty", "129-chars", "non-ascii", "control", "delete"]
)
def test_an_invalid_header_is_400_and_touches_nothing(api, value):
    api.get("/orders")
    counters = api.items()
    answer = api.post("/orders", headers=once(value))
    assert answer.status == 400 and answer.body["error"] == "bad_request"
    assert "Idempotency-Key" in answer.body["message"]
    assert api.items() == counters and api.items(IDEMPOTENCY_TABLE) == []


def test_the_longest_header_is_fine(api):
    assert api.get("/orders", headers=once("x" * 128)).status == 200


def test_a_failed_first_attempt_does_not_poison_the_key(api, monkeypatch):
    with monkeypatch.context() as patched:
        patched.setattr(api.handler.dynamodb, "update_item", throttle)
        failed = api.post("/orders", headers=once("retry-me"))
    assert failed.status == 503 and "ticket" not in failed.body
    retried = api.post("/orders", headers=once("retry-me"))
    assert retried.body == {"key": "orders", "ticket": 5000}
    assert api.post("/orders", headers=once("retry-me")).body == retried.body


def test_a_refused_first_attempt_does_not_poison_the_key(deploy):
    config = {"regions": {"us-east-1": 0}, "counters": {"small": {"max": 2}}}
    api = deploy(config)
    api.get("/small", query={"count": "2"})
    assert api.post("/small", headers=once("late")).body["error"] == "exhausted"
    raised = deploy({**config, "counters": {"small": {"max": 3}}})  # the operator raises max
    assert raised.post("/small", headers=once("late")).body == {"key": "small", "ticket": 3}


def test_an_unavailable_idempotency_table_is_503_and_issues_nothing(api, monkeypatch):
    monkeypatch.setattr(api.handler.dynamodb, "put_item", throttle)
    answer = api.post("/orders", headers=once("k"))
    assert answer.status == 503 and answer.body["error"] == "unavailable"
    assert "Retry-After" in answer.headers and "nothing was issued" in answer.body["message"]
    assert api.items() == []


def test_after_the_expiry_a_repeat_is_a_new_request(api):
    first = api.post("/orders", headers=once("old"))
    [record] = api.items(IDEMPOTENCY_TABLE)
    assert int(record["expiration"]["N"]) > time.time() + 3000  # an hour by default (README: Configuration)
    api.client.update_item(
        TableName=IDEMPOTENCY_TABLE,
        Key={"id": record["id"]},
        UpdateExpression="SET expiration = :past",
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    assert api.post("/orders", headers=once("old")).body["ticket"] == first.body["ticket"] + 1


def test_an_answer_that_could_not_be_recorded_is_a_gap_never_a_duplicate(api, monkeypatch):
    """The ticket is written, then saving the answer for the Idempotency-Key fails: the caller
    gets a 503 without it, and that ticket is never handed to anyone."""
    real_update = api.handler.dynamodb.update_item

    def update_item(**request):
        if request["TableName"] == IDEMPOTENCY_TABLE:
            throttle()
        return real_update(**request)

    with monkeypatch.context() as patched:
        patched.setattr(api.handler.dynamodb, "update_item", update_item)
        lost = api.post("/orders", headers=once("unlucky"))
    assert lost.status == 503 and "ticket" not in lost.body
    assert api.items()[0]["last"] == {"N": "5000"}  # 5000 was spent
    assert lost.body["message"].startswith("the tickets were taken, but their answer could not be saved")
    assert "a gap, handed to no one" in lost.body["message"] and "handed out" not in lost.body["message"]
    retry = api.post("/orders", headers=once("unlucky"))  # the lock outlives the failed attempt
    assert retry.status == 409 and retry.body["error"] == "in_progress"
    assert api.post("/orders", headers=once("another")).body["ticket"] == 5001


def denied(**_):
    raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "op")


def test_a_denied_save_after_the_issue_is_a_500_that_says_the_tickets_were_spent(api, monkeypatch, caplog):
    """The function's role may write the counter table but not the idempotency table's answer (a misconfiguration):
    the 500 the InternalErrors alarm counts says the tickets were taken and are a gap, not that nothing was."""
    real_update = api.handler.dynamodb.update_item

    def update_item(**request):
        return denied() if request["TableName"] == IDEMPOTENCY_TABLE else real_update(**request)

    monkeypatch.setattr(api.handler.dynamodb, "update_item", update_item)
    lost = api.post("/orders", query={"count": "2"}, headers=once("denied"))
    assert (lost.status, lost.body["error"]) == (500, "internal_error")
    assert api.items()[0]["last"] == {"N": "5001"}  # 5000 and 5001 were spent
    assert lost.body["message"].startswith("the tickets were taken, but their answer could not be saved")
    assert "misconfiguration" in lost.body["message"] and "nothing was" not in lost.body["message"]
    assert "the idempotency table refused a call" in caplog.text  # logged, with its cause


def test_a_denied_lock_before_the_issue_is_a_500_that_says_nothing_was_issued(api, monkeypatch):
    monkeypatch.setattr(api.handler.dynamodb, "put_item", denied)
    answer = api.post("/orders", headers=once("denied"))
    assert (answer.status, answer.body["error"]) == (500, "internal_error")
    assert "nothing was issued" in answer.body["message"] and api.items() == []


def test_a_deadline_between_the_issue_and_the_save_says_the_tickets_were_spent(api, monkeypatch):
    """The request's deadline refuses the answer's save (timing.DeadlineBoundClient): the tickets were taken."""
    real_update = api.handler.dynamodb.update_item

    def update_item(**request):
        if request["TableName"] == IDEMPOTENCY_TABLE:
            timing.Deadline().require_time_for_a_call()  # a deadline that has passed: refuses as the client does
        return real_update(**request)

    monkeypatch.setattr(api.handler.dynamodb, "update_item", update_item)
    lost = api.post("/orders", headers=once("late"))
    assert (lost.status, lost.body["error"]) == (503, "unavailable")
    assert api.items()[0]["last"] == {"N": "5000"}
    assert lost.body["message"].startswith("the tickets were taken, but") and "409" in lost.body["message"]


def test_the_same_header_from_two_callers_gets_two_tickets(api):
    """Two services that happen to pick the same Idempotency-Key must not get each other's ticket."""
    other_caller = copy.deepcopy(EVENT_TEMPLATE["requestContext"]["authorizer"])
    other_caller["iam"].update(accountId="210987654321", userArn="arn:aws:iam::210987654321:user/billing")
    header = {"idempotency-key": "retry-1"}
    mine = api.get("/orders", headers=header)
    theirs = api.handler.lambda_handler(
        {
            **function_url_event("/orders", headers=header),
            "requestContext": {**function_url_event("/orders")["requestContext"], "authorizer": other_caller},
        },
        FakeLambdaContext(),
    )
    assert mine.status == 200 and theirs["statusCode"] == 200
    assert json.loads(theirs["body"])["ticket"] == mine.body["ticket"] + 1
    assert api.get("/orders", headers=header).body == mine.body  # each caller's repeat is still a repeat


def signed_by(user_arn: str, caller_id: str) -> dict:
    """A Function URL event's requestContext, signed by `user_arn` (AWS_IAM auth)."""
    context = copy.deepcopy(EVENT_TEMPLATE["requestContext"])
    context["authorizer"]["iam"].update(userArn=user_arn, callerId=caller_id, userId=caller_id)
    return context


def test_a_new_session_of_the_same_role_is_the_same_caller(api):
    """Refreshed AssumeRole credentials carry a new session name (botocore names each session
    anew): a retry across the refresh must still get the first answer, not new tickets."""
    role = "arn:aws:sts::123456789012:assumed-role/orders-service"
    header = {"idempotency-key": "across-a-refresh"}

    def call_as(session: str, role_arn: str = role, role_id: str = "AROAEXAMPLE") -> dict:
        event = {
            **function_url_event("/orders", headers=header),
            "requestContext": signed_by(f"{role_arn}/{session}", f"{role_id}:{session}"),
        }
        result = api.handler.lambda_handler(event, FakeLambdaContext())
        assert result["statusCode"] == 200, result
        return json.loads(result["body"])

    first = call_as("botocore-session-1795348800")
    assert call_as("botocore-session-1795352400") == first  # the same role, a later session
    other_role = "arn:aws:sts::123456789012:assumed-role/billing-service"
    assert call_as("botocore-session-1795348800", other_role, "AROAOTHER")["ticket"] == first["ticket"] + 1


def test_copies_that_find_a_refused_copys_lock_gone_get_409_in_progress_then_the_refusal(deploy, monkeypatch):
    """Concurrent copies of a request for a spent key (seen on dynalite): each copy's lock write fails
    on another copy's lock, which that copy's refusal deletes before this one reads it. Powertools
    calls that an inconsistent state; it is a request in flight a moment ago, never a 503."""
    api = deploy({"regions": {"us-east-1": 0}, "counters": {"small": {"max": 2}}})
    api.get("/small", query={"count": "2"})
    real_put = api.handler.dynamodb.put_item

    def another_copys_lock(**request):
        if request["TableName"] != IDEMPOTENCY_TABLE:
            return real_put(**request)
        # dynalite's answer: the condition failed, without the item it failed on
        raise ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "held"}}, "PutItem")

    with monkeypatch.context() as racing:
        racing.setattr(api.handler.dynamodb, "put_item", another_copys_lock)
        copy_answer = api.post("/small", headers=once("spent"))
    assert (copy_answer.status, copy_answer.body["error"]) == (409, "in_progress")
    retried = api.post("/small", headers=once("spent"))  # the client retries in_progress
    assert (retried.status, retried.body["error"]) == (409, "exhausted")
    assert api.items(IDEMPOTENCY_TABLE) == []


def test_a_lost_answer_to_the_lock_write_is_a_503_and_the_lock_ends_at_the_deadline(api):
    """The lock is written but its answer lost. botocore does not retry it (a retry would fail on
    the request's own lock and answer 409 in_progress); the lock expires at the request's deadline,
    seconds away, not at the end of the function's time (FakeLambdaContext: 10 s)."""
    lost = []

    def write_then_time_out(request, event_name, **_):
        if not lost:
            lost.append(moto_dynamodb(event_name=event_name, request=request))  # DynamoDB applies it
            raise ReadTimeoutError(endpoint_url=request.url)
        return None

    events = api.handler.dynamodb.meta.events
    events.register_first("before-send.dynamodb.PutItem", write_then_time_out)
    started_millis = time.time() * 1000
    try:
        answer = api.post("/orders", headers=once("lost-lock"))
    finally:
        events.unregister("before-send.dynamodb.PutItem", write_then_time_out)
    assert (answer.status, answer.body["error"]) == (503, "unavailable") and len(lost) == 1
    assert api.items() == []  # nothing issued
    [lock] = api.items(IDEMPOTENCY_TABLE)
    expires_in = int(lock["in_progress_expiration"]["N"]) - started_millis
    assert 0 < expires_in <= timing.REQUEST_BUDGET_SECONDS * 1000 + 50
    assert api.post("/orders", headers=once("lost-lock")).body["error"] == "in_progress"  # until then


def test_the_lock_of_a_lost_attempt_blocks_its_key_only_until_the_deadline(api):
    """With 2 s of the function left, the deadline is 1.75 s away: after it, the retry is served."""
    real_put = api.handler.dynamodb.put_item

    def lost_answer(**request):
        real_put(**request)
        raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    context = FakeLambdaContext()
    context.get_remaining_time_in_millis = lambda: 2_000  # type: ignore[method-assign]
    started_millis = time.time() * 1000
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(api.handler.dynamodb, "put_item", lost_answer)
        result = api.handler.lambda_handler(function_url_event("/orders", headers=once("short")), context)
    assert result["statusCode"] == 503
    [lock] = api.items(IDEMPOTENCY_TABLE)
    # The lock ends at the deadline (the test above shows a retry before it gets in_progress); read
    # from the record, not raced against the clock, so a slow machine cannot fail it.
    assert int(lock["in_progress_expiration"]["N"]) - started_millis <= 2_000 - 250 + 50
    time.sleep(max(0.0, int(lock["in_progress_expiration"]["N"]) / 1000 - time.time()) + 0.05)
    assert api.post("/orders", headers=once("short")).body == {"key": "orders", "ticket": 5000}


def wait_out_the_lock(api) -> None:
    """Sleep until the one record's lock has passed its deadline (its in_progress_expiration)."""
    [lock] = api.items(IDEMPOTENCY_TABLE)
    time.sleep(max(0.0, int(lock["in_progress_expiration"]["N"]) / 1000 - time.time()) + 0.05)


def short_lived(api, header: str) -> dict:
    """A first attempt with 3 s of the function left: its lock ends at its deadline, 2.75 s away."""
    context = FakeLambdaContext()
    context.get_remaining_time_in_millis = lambda: 3_000  # type: ignore[method-assign]
    return api.handler.lambda_handler(function_url_event("/orders", "POST", headers=once(header)), context)


def test_a_late_save_of_an_expired_lock_never_replaces_the_retrys_answer(api, monkeypatch):
    """The first attempt's save starts before its deadline and lands after it (a slow connection): a retry took
    the expired lock meanwhile and issued. The late save must not answer for the key: the retry's answer stands."""
    real_update, saves, answers = api.handler.dynamodb.update_item, [], []

    def update_item(**request):
        if request["TableName"] == IDEMPOTENCY_TABLE:
            saves.append(request)
            if len(saves) == 1:  # the first attempt's save, on its way past the lock's deadline
                wait_out_the_lock(api)
                answers.append(api.post("/orders", headers=once("late-save")))  # the retry takes the expired lock
            elif len(saves) == 2:  # the retry's save; a copy sent while the retry runs comes first
                answers.append(api.post("/orders", headers=once("late-save")))
        return real_update(**request)

    monkeypatch.setattr(api.handler.dynamodb, "update_item", update_item)
    first = short_lived(api, "late-save")
    monkeypatch.undo()
    assert first["statusCode"] == 503 and "outlived its lock" in json.loads(first["body"])["message"]
    answers.append(api.post("/orders", headers=once("late-save")))
    said = [answer.body.get("ticket", answer.body.get("error")) for answer in answers]
    assert said == ["in_progress", 5001, 5001]  # the copy's, the retry's, the last one's: 5000 is a gap


def test_a_late_delete_of_an_expired_lock_never_frees_the_retrys_lock(api, monkeypatch):
    """The first attempt fails and deletes its lock, the delete landing after the deadline, when the retry holds
    the lock and is issuing: a copy sent meanwhile must find the lock held (409), never issue beside the retry."""
    real_update, real_delete = api.handler.dynamodb.update_item, api.handler.dynamodb.delete_item
    issues, deletes, answers = [], [], []

    def update_item(**request):
        if request["TableName"] == COUNTER_TABLE:
            issues.append(request)
            if len(issues) == 1:
                throttle()  # the first attempt's issue fails
            if len(issues) == 2:  # the retry's issue: the late delete lands just before it
                with contextlib.suppress(ClientError):
                    real_delete(**deletes[0])
                answers.append(api.post("/orders", headers=once("late-delete")))  # a copy sent while the retry runs
        return real_update(**request)

    def delete_item(**request):
        deletes.append(request)  # the first attempt's delete, on its way past the lock's deadline
        wait_out_the_lock(api)
        answers.append(api.post("/orders", headers=once("late-delete")))  # the retry takes the expired lock
        return {}

    monkeypatch.setattr(api.handler.dynamodb, "update_item", update_item)
    monkeypatch.setattr(api.handler.dynamodb, "delete_item", delete_item)
    assert short_lived(api, "late-delete")["statusCode"] == 503
    monkeypatch.undo()
    answers.append(api.post("/orders", headers=once("late-delete")))
    said = [answer.body.get("ticket", answer.body.get("error")) for answer in answers]
    assert said == ["in_progress", 5000, 5000]  # the copy's, the retry's, the last one's


# --- replays first: a stored answer whatever the config now says ------------------------------------


def replayed(before, after, path: str, header: str, **request) -> tuple:
    """The first answer under one config and the retry's under the next (a deploy between them), with
    the counter table as the retry found and left it."""
    first = before.get(path, headers=once(header), **request)
    assert first.status == 200, first.body
    counters = after.items()
    retry = after.get(path, headers=once(header), **request)
    assert after.items() == counters  # the retry issued nothing
    return first, retry


def test_a_block_replays_after_max_block_was_lowered(deploy):
    """A block of 800 issued under maxBlock 1000, retried after maxBlock became 500: its 800 tickets."""
    config = {"regions": {"us-east-1": 0}, "maxBlock": 1000}
    first, retry = replayed(
        deploy(config), deploy({**config, "maxBlock": 500}), "/_blocks/orders", "b-800", query={"count": "800"}
    )
    assert (retry.status, retry.body) == (200, first.body) and first.body["count"] == 800
    # Without the header, or with a new one, the new bound holds.
    assert deploy({**config, "maxBlock": 500}).get("/_blocks/orders", query={"count": "800"}).status == 400


def test_a_block_replays_after_a_key_lowered_its_max_block(deploy):
    config = {"regions": {"us-east-1": 0}, "counters": {"orders": {"maxBlock": 1000}}}
    lowered = {**config, "counters": {"orders": {"maxBlock": 10}}}
    first, retry = replayed(deploy(config), deploy(lowered), "/_blocks/orders", "b-k", query={"count": "800"})
    assert (retry.status, retry.body) == (200, first.body)


@pytest.mark.parametrize("path", ["/_blocks/free", "/free"])
def test_a_request_replays_after_strict_keys_was_turned_on(deploy, path):
    config = {"regions": {"us-east-1": 0}, "counters": {"orders": {}}}
    first, retry = replayed(deploy(config), deploy({**config, "strictKeys": True}), path, "strict-" + path)
    assert (retry.status, retry.body) == (200, first.body)
    new = deploy({**config, "strictKeys": True}).get(path, headers=once("another"))
    assert new.status == 404  # a new request meets strictKeys


def test_a_request_replays_after_max_was_lowered_below_its_tickets(deploy):
    config = {"regions": {"us-east-1": 0}, "counters": {"orders": {"max": 100}}}
    lowered = {**config, "counters": {"orders": {"max": 2}}}
    first, retry = replayed(deploy(config), deploy(lowered), "/orders", "m-3", query={"count": "3"})
    assert first.body == {"key": "orders", "ticket": 1, "tickets": [1, 2, 3]}
    assert (retry.status, retry.body) == (200, first.body)


def test_a_request_to_counter_replays_after_compat_took_the_path(deploy):
    """Before compat, GET /counter issued the key `counter`; after compat took the path, the same URL is
    the compatibility route, which refuses a new request without ?systemKey=, but a retry of the old one
    gets its ticket (as the route renders it: the bare number)."""
    config = {"regions": {"us-east-1": 0}}
    before, after = deploy(config), deploy({**config, "compat": {"path": "counter"}})
    first, retry = replayed(before, after, "/counter", "c-on")
    assert first.body == {"key": "counter", "ticket": 1}
    assert (retry.status, retry.body) == (200, "1")
    records = after.items(IDEMPOTENCY_TABLE)
    new = after.get("/counter", headers=once("c-new"))
    assert (new.status, new.body["error"]) == (400, "bad_request")
    assert after.items(IDEMPOTENCY_TABLE) == records  # the refusal leaves no record behind


def test_a_compat_request_replays_after_compat_was_turned_off(deploy):
    """The compatibility route's request for the key named like its path reads the same without compat."""
    config = {"regions": {"us-east-1": 0}}
    before, after = deploy({**config, "compat": {"path": "counter"}}), deploy(config)
    first, retry = replayed(before, after, "/counter", "c-off", query={"systemKey": "counter"})
    assert (first.body, retry.status, retry.body) == ("1", 200, {"key": "counter", "ticket": 1})


def test_a_record_the_powertools_release_wrote_is_replayed_and_powertools_reads_ours(api):
    """During a rollout both releases serve one table: the record is the one Powertools' idempotency utility writes
    (the previous release's), its id, hashes and attributes alike, so each release replays the other's answers."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig

    from tickets.access.rules import caller

    powertools = DynamoDBPersistenceLayer(table_name=IDEMPOTENCY_TABLE, boto3_client=api.client)
    config = IdempotencyConfig(event_key_jmespath="[caller, idempotency_key]", payload_validation_jmespath="request")
    powertools.configure(config, "tickets.idempotency.idempotent.<locals>.issue_once")  # the previous release's

    def call(header: str, count: int = 1) -> dict:
        asked = {"key": "orders", "count": count}
        return {"caller": caller(function_url_event("/orders")), "idempotency_key": header, "request": asked}

    ours = api.post("/orders", headers=once("ours"))
    record = powertools.get_record(call("ours"))  # validates the request's hash, as the previous release does
    assert (record.status, record.response_json_as_dict()) == ("COMPLETED", ours.body)
    powertools.save_inprogress(call("theirs", count=2), remaining_time_in_millis=5_000)
    powertools.save_success(call("theirs", count=2), {"key": "orders", "ticket": 4242, "tickets": [4242, 4243]})
    counters = api.items()
    replayed = api.post("/orders", query={"count": "2"}, headers=once("theirs"))
    assert replayed.body == {"key": "orders", "ticket": 4242, "tickets": [4242, 4243]} and api.items() == counters
    assert api.post("/orders", headers=once("theirs")).body["error"] == "idempotency_key_reused"
    powertools.save_inprogress(call("locked"), remaining_time_in_millis=5_000)
    assert api.post("/orders", headers=once("locked")).body["error"] == "in_progress"
