"""Worker-id leases through the real handler on real Function URL events, on moto and the memory backend
(docs/how-to/worker-ids.md): a lease's life, an idempotent acquire, a full pool's 503 with Retry-After, and bad
input answered 4xx with nothing written. Concurrency is on dynalite (test_workers_dynalite.py); the protocol's model
is tests/models."""

from __future__ import annotations

import json
import math
import time

import pytest

from access_support import role_session
from moto_deployment import IDEMPOTENCY_TABLE, WORKERS_TABLE

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)
POOL = "snowflake"
CONFIG = {
    "regions": {"us-east-1": 0},
    "workers": {POOL: {"size": 3, "ttlSeconds": 60}, "one": {"size": 1, "ttlSeconds": 10}},
}


@pytest.fixture
def pools(deploy):
    return deploy(CONFIG)


def test_a_lease_is_acquired_listed_renewed_released_and_granted_again_at_a_higher_epoch(pools):
    first = pools.post(f"/_workers/{POOL}", body=json.dumps({"owner": "api-1"}))
    assert first.status == 200, first
    lease = first.body
    assert set(lease) == {"pool", "worker", "epoch", "expiresAt", "ttlSeconds"}
    assert lease["pool"] == POOL and 0 <= lease["worker"] < 3 and lease["epoch"] == 1 and lease["ttlSeconds"] == 60
    listed = pools.get(f"/_workers/{POOL}").body
    assert listed == {
        "pool": POOL,
        "size": 3,
        "ttlSeconds": 60,
        "leases": [{"worker": lease["worker"], "epoch": 1, "owner": "api-1", "expiresAt": lease["expiresAt"]}],
    }
    path, held = f"/_workers/{POOL}/{lease['worker']}", json.dumps({"epoch": 1})
    renewed = pools.call(path, "PUT", body=held)
    assert renewed.status == 200 and renewed.body["epoch"] == 1 and renewed.body["expiresAt"] >= lease["expiresAt"]
    assert pools.call(path, "PUT", body=json.dumps({"epoch": 2})).body["error"] == "lease_lost"
    assert pools.call(path, "DELETE", body=held).body == {
        "pool": POOL,
        "worker": lease["worker"],
        "epoch": 1,
        "released": True,
    }
    again = pools.call(path, "DELETE", body=held).body
    assert again["released"] is False and "nothing changed" in again["message"]
    assert pools.call(path, "PUT", body=held).status == 409  # released: that lease is lost
    assert pools.get(f"/_workers/{POOL}").body["leases"] == []
    # The pool of one: its one id, released, is granted again one epoch higher, but not before the hand-over gap
    # (max(1 s, 10% of the ttl): the holders' margin), so ids made on the next holder's clock never meet the last's.
    assert pools.post("/_workers/one").body["epoch"] == 1
    assert pools.call("/_workers/one/0", "DELETE", body=held).body["released"] is True
    within = pools.post("/_workers/one")
    assert (within.status, within.body["error"], within.headers["Retry-After"]) == (503, "pool_full", "1")
    time.sleep(1.0)
    assert (pools.post("/_workers/one").body["worker"], pools.get("/_workers/one").body["leases"][0]["epoch"]) == (0, 2)


def test_distinct_ids_until_the_pool_is_full_then_503_pool_full_with_retry_after(pools):
    began = time.monotonic()
    workers = sorted(pools.post(f"/_workers/{POOL}").body["worker"] for _ in range(3))
    assert workers == [0, 1, 2]
    before = pools.items(WORKERS_TABLE)
    full = pools.post(f"/_workers/{POOL}")
    assert (full.status, full.body["error"]) == (503, "pool_full")
    took = time.monotonic() - began  # the earliest lease was granted at most this long before the refusal
    assert 60 - math.ceil(took) <= int(full.headers["Retry-After"]) <= 60  # until the earliest lease expires
    assert pools.items(WORKERS_TABLE) == before


def test_a_retried_acquire_with_the_same_idempotency_key_gets_the_same_grant(pools):
    key = {"idempotency-key": "a3f1-retry"}
    first = pools.post(f"/_workers/{POOL}", headers=key)
    assert first.status == 200
    assert pools.post(f"/_workers/{POOL}", headers=key).body == first.body
    assert len(pools.get(f"/_workers/{POOL}").body["leases"]) == 1
    other = pools.post(f"/_workers/{POOL}", headers=key, body=json.dumps({"owner": "someone else"}))
    assert (other.status, other.body["error"]) == (422, "idempotency_key_reused")


@pytest.mark.parametrize(
    "method, path, body, status",
    [
        ("POST", "/_workers/nope", None, 404),
        ("GET", "/_workers/nope", None, 404),
        ("PUT", "/_workers/nope/0", '{"epoch": 1}', 404),
        ("PUT", f"/_workers/{POOL}/3", '{"epoch": 1}', 400),  # out of range
        ("PUT", f"/_workers/{POOL}/-1", '{"epoch": 1}', 400),
        ("DELETE", f"/_workers/{POOL}/x", '{"epoch": 1}', 400),
        ("PUT", f"/_workers/{POOL}/0", '{"epoch": "1"}', 400),
        ("PUT", f"/_workers/{POOL}/0", '{"epoch": 1.5}', 400),
        ("PUT", f"/_workers/{POOL}/0", '{"epoch": true}', 400),
        ("PUT", f"/_workers/{POOL}/0", "{}", 400),
        ("DELETE", f"/_workers/{POOL}/0", None, 400),
        ("PUT", f"/_workers/{POOL}/0", '{"epoch": 1, "worker": 0}', 400),
        ("POST", f"/_workers/{POOL}", '{"owner": ""}', 400),
        ("POST", f"/_workers/{POOL}", '{"owner": "tab\\there"}', 400),
        ("POST", f"/_workers/{POOL}", json.dumps({"owner": "x" * 129}), 400),
        ("POST", f"/_workers/{POOL}", '{"count": 1}', 400),
        ("POST", f"/_workers/{POOL}", "[1]", 400),
        ("POST", f"/_workers/{POOL}", json.dumps({"owner": "x" * 5000}), 413),
        ("PUT", f"/_workers/{POOL}/0", json.dumps({"epoch": 1, "pad": "x" * 5000}), 413),
        ("GET", f"/_workers/{POOL}", '{"owner": "a"}', 400),
        ("PATCH", f"/_workers/{POOL}", None, 405),
    ],
)
def test_bad_input_is_4xx_and_writes_nothing(pools, method, path, body, status):
    held = pools.post(f"/_workers/{POOL}")  # a live lease beside: it must stay as it is
    before = (pools.items(WORKERS_TABLE), pools.items(IDEMPOTENCY_TABLE))
    answer = pools.call(path, method, body=body, headers={"idempotency-key": "bad-input"})
    assert answer.status == status, answer
    assert set(answer.body) == {"error", "message"}
    assert (pools.items(WORKERS_TABLE), pools.items(IDEMPOTENCY_TABLE)) == before
    assert held.status == 200


def test_the_allow_header_joins_a_paths_routes(pools):
    answer = pools.call(f"/_workers/{POOL}/0", "POST")
    assert (answer.status, answer.headers["Allow"]) == (405, "PUT, DELETE")


def test_access_rules_name_the_pools_a_caller_may_use_with_the_workers_operation(deploy):
    """The operation `workers`, matched against the pool like a key: refused before any read or write."""
    fleet = "arn:aws:iam::111122223333:role/fleet"
    region = deploy({**CONFIG, "access": {fleet: {"workers": ["snow*"]}, "111122223333": {"issue": ["*"]}}})
    allowed = region.post(f"/_workers/{POOL}", iam=role_session("fleet"))
    assert allowed.status == 200
    with region.dynamodb_calls() as calls:
        refused = [
            region.post("/_workers/one", iam=role_session("fleet")),
            region.call(
                f"/_workers/{POOL}/{allowed.body['worker']}", "PUT", body='{"epoch": 1}', iam=role_session("other")
            ),
            region.get(f"/_workers/{POOL}", iam=role_session("other")),
        ]
    assert [(answer.status, answer.body["error"]) for answer in refused] == [(403, "forbidden")] * 3
    assert calls == []
