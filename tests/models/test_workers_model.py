"""Worker-id leases as a stateful model, on the real handler over moto in process (docs/explanation/worker-leases.md):
holders acquire, renew and release the ids of a small pool through three function instances whose clocks are
skewed; time jumps (a holder's pause may outlast the ttl), answers are lost, acquires are retried with the same
Idempotency-Key, and the function is killed before or after any DynamoDB call of a request (kill -9 between
writes). Each holder keeps the clients' safety rule: it uses an id only until the monotonic time at which it sent
the request that produced its lease (for a retried acquire, the first send), plus the ttl, minus the margin.

After every step:
- no two holders that each believe themselves within their safe end hold the same id at the same true time;
- no id's epoch in the table ever goes back, and no two grants a holder adopted share an id and an epoch;
- no two unexpired leases share an id (an item per id), and each believing holder's id is leased at its epoch.

`TICKETS_MODEL_EXAMPLES=500 pytest tests/models/test_workers_model.py` runs more histories than `make test`'s.
"""

from __future__ import annotations

import datetime
import itertools
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

import boto3
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from moto import mock_aws

from common import model_settings
from moto_deployment import FakeLambdaContext, function_url_event
from tickets.app import create_app, dynamodb_client
from tickets.settings import Settings
from tickets.tables import COUNTER_KEY, IDEMPOTENCY_KEY, create_series_table_arguments, create_table_arguments
from tickets.workers import PoolConfig

EXAMPLES = int(os.environ.get("TICKETS_MODEL_EXAMPLES", "20"))
POOL, SIZE, TTL_SECONDS = "snowflake", 2, 10
MARGIN_MILLIS = max(1000, TTL_SECONDS * 100)  # the clients' default: max(1 s, 10% of the ttl)
MAX_SKEW_MILLIS = MARGIN_MILLIS // 2 - 1  # each instance's from the true time: any two within the margin
HOLDERS = 4
INSTANCES = 3
RARELY = st.sampled_from([False, False, False, True])  # an answer lost, a quarter of the time


class Crashed(BaseException):
    """The function was killed here: nothing of the request runs after this, and no answer comes back."""


class CrashingClient:
    """The function's DynamoDB client, killed before or after its n-th call when the model says so."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.plan: tuple[int, bool] | None = None  # (calls before the kill, whether that call lands first)

    def __getattr__(self, operation: str) -> Any:
        call = getattr(self._client, operation)

        def crashing(**arguments: Any) -> Any:
            if self.plan is not None:
                left, lands = self.plan
                if left == 0:
                    self.plan = None
                    if lands:
                        call(**arguments)
                    raise Crashed
                self.plan = (left - 1, lands)
            return call(**arguments)

        return crashing


@dataclass
class Holder:
    worker: int | None = None
    epoch: int = 0
    safe_end: int = 0  # true ms: the holder's monotonic clock runs at the true rate
    lost_key: str | None = None  # an acquire whose answer never came: retried with this key
    lost_sent: int = 0


class WorkerLeases(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_800_000_000_000  # the true time, ms
        suffix = uuid.uuid4().hex[:10]
        self.client = boto3.client("dynamodb", region_name="us-east-1")
        tables = {name: f"{name}-{suffix}" for name in ("counters", "idempotency", "workers")}
        self.client.create_table(**create_table_arguments(tables["counters"], COUNTER_KEY))
        self.client.create_table(**create_table_arguments(tables["idempotency"], IDEMPOTENCY_KEY))
        self.client.create_table(**create_series_table_arguments(tables["workers"]))
        self.table = tables["workers"]
        settings_ = Settings(workers={POOL: PoolConfig(SIZE, TTL_SECONDS)})
        self.skews = [0] * INSTANCES
        self.clients = [CrashingClient(dynamodb_client(region_name="us-east-1")) for _ in range(INSTANCES)]
        self.apps = [
            create_app(
                settings_,
                self.clients[index],
                tables["counters"],
                tables["idempotency"],
                workers_table=tables["workers"],
                clock=lambda index=index: datetime.datetime.fromtimestamp(
                    (self.now + self.skews[index]) / 1000, datetime.UTC
                ),
            )
            for index in range(INSTANCES)
        ]
        self.holders = [Holder() for _ in range(HOLDERS)]
        self.keys = itertools.count()
        self.adopted: dict[tuple[int, int], int] = {}  # (worker, epoch) -> the holder that adopted it
        self.epochs: dict[int, int] = {}  # worker -> the highest epoch the table has shown

    def _send(self, instance: int, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
        """The answer (status, JSON), or None when the function was killed or the answer lost."""
        event = function_url_event(
            path,
            method,
            body=None if body is None else json.dumps(body),
            headers={"idempotency-key": key} if key else None,
        )
        try:
            result = self.apps[instance].lambda_handler(event, FakeLambdaContext())
        except Crashed:
            return None
        return result["statusCode"], json.loads(result["body"])

    def _adopt(self, holder: Holder, index: int, answer: dict[str, Any], sent: int) -> None:
        worker, epoch = answer["worker"], answer["epoch"]
        assert self.adopted.setdefault((worker, epoch), index) == index, ("one grant, two holders", worker, epoch)
        safe_end = sent + TTL_SECONDS * 1000 - MARGIN_MILLIS
        if safe_end > self.now:  # a replay that comes too late is a lease already lost: the holder knows it
            holder.worker, holder.epoch, holder.safe_end = worker, epoch, safe_end

    @rule(instance=st.integers(0, INSTANCES - 1), skew=st.integers(-MAX_SKEW_MILLIS, MAX_SKEW_MILLIS))
    def skew_a_clock(self, instance: int, skew: int) -> None:
        self.skews[instance] = skew

    @rule(millis=st.sampled_from([1, 300, 1000, 3000, 8500, 8900, 9500, 12000, 30000]))
    def time_passes(self, millis: int) -> None:
        """Every holder is paused meanwhile: a jump past the ttl is a pause longer than it."""
        self.now += millis

    @rule(
        index=st.integers(0, HOLDERS - 1),
        instance=st.integers(0, INSTANCES - 1),
        lose=RARELY,
        kill=st.one_of(st.none(), st.none(), st.none(), st.tuples(st.integers(0, 3), st.booleans())),
    )
    def acquire(self, index: int, instance: int, lose: bool, kill: tuple[int, bool] | None) -> None:
        holder = self.holders[index]
        if holder.worker is not None and self.now < holder.safe_end:
            return
        key, sent = f"acquire-{next(self.keys)}", self.now
        self.clients[instance].plan = kill
        answer = self._send(instance, "POST", f"/_workers/{POOL}", {"owner": f"holder {index}"}, key)
        self.clients[instance].plan = None
        holder.worker = None
        if answer is None or lose:
            holder.lost_key, holder.lost_sent = key, sent
        elif answer[0] == 200:
            self._adopt(holder, index, answer[1], sent)
        else:
            assert (answer[0], answer[1]["error"]) in ((503, "pool_full"), (409, "in_progress")), answer

    @precondition(lambda self: any(holder.lost_key for holder in self.holders))
    @rule(index=st.integers(0, HOLDERS - 1), instance=st.integers(0, INSTANCES - 1))
    def retry_the_lost_acquire(self, index: int, instance: int) -> None:
        holder = self.holders[index]
        if holder.lost_key is None or (holder.worker is not None and self.now < holder.safe_end):
            return
        answer = self._send(instance, "POST", f"/_workers/{POOL}", {"owner": f"holder {index}"}, holder.lost_key)
        if answer is not None and answer[0] == 200:
            self._adopt(holder, index, answer[1], holder.lost_sent)  # the first send, as the clients keep it
            holder.lost_key = None

    @rule(
        index=st.integers(0, HOLDERS - 1),
        instance=st.integers(0, INSTANCES - 1),
        lose=RARELY,
        kill=st.one_of(st.none(), st.none(), st.none(), st.tuples(st.just(0), st.booleans())),
    )
    def renew(self, index: int, instance: int, lose: bool, kill: tuple[int, bool] | None) -> None:
        holder = self.holders[index]
        if holder.worker is None:
            return
        sent = self.now
        self.clients[instance].plan = kill
        answer = self._send(instance, "PUT", f"/_workers/{POOL}/{holder.worker}", {"epoch": holder.epoch})
        self.clients[instance].plan = None
        if answer is None or lose:
            return  # no answer: the safe end stays where the last answered request put it
        if answer[0] == 409:
            assert answer[1]["error"] == "lease_lost"
            holder.worker = None
        else:
            assert answer[0] == 200 and (answer[1]["worker"], answer[1]["epoch"]) == (holder.worker, holder.epoch)
            holder.safe_end = max(holder.safe_end, sent + TTL_SECONDS * 1000 - MARGIN_MILLIS)

    @rule(index=st.integers(0, HOLDERS - 1), instance=st.integers(0, INSTANCES - 1), lose=st.booleans())
    def release(self, index: int, instance: int, lose: bool) -> None:
        holder = self.holders[index]
        if holder.worker is None:
            return
        worker, epoch = holder.worker, holder.epoch
        holder.worker = None  # it stops using the id before it says so
        answer = self._send(instance, "DELETE", f"/_workers/{POOL}/{worker}", {"epoch": epoch})
        assert answer is None or answer[0] == 200, answer

    @invariant()
    def no_two_believing_holders_share_an_id(self) -> None:
        believing = [
            holder.worker for holder in self.holders if holder.worker is not None and self.now < holder.safe_end
        ]
        assert len(believing) == len(set(believing)), (self.now, self.holders)

    @invariant()
    def epochs_only_grow_and_each_believer_is_leased(self) -> None:
        items = self.client.scan(TableName=self.table, ConsistentRead=True)["Items"]
        leased = {int(item["n"]["N"]): (int(item["epoch"]["N"]), int(item["expiresAt"]["N"])) for item in items}
        assert len(leased) == len(items) and all(0 <= worker < SIZE for worker in leased)
        for worker, (epoch, _) in leased.items():
            assert epoch >= self.epochs.get(worker, 0), ("an epoch went back", worker)
            self.epochs[worker] = epoch
        for holder in self.holders:
            if holder.worker is not None and self.now < holder.safe_end:
                epoch, expires = leased[holder.worker]
                # No instance sees the lease expired: a believer's id is granted to no one else.
                assert epoch == holder.epoch and expires - MAX_SKEW_MILLIS > self.now, (holder, leased)


def test_worker_leases_model_on_moto() -> None:
    WorkerLeases.TestCase.settings = model_settings(EXAMPLES, 40)
    with mock_aws():
        WorkerLeases.TestCase().runTest()


def test_an_id_is_granted_again_only_after_its_holders_safe_end() -> None:
    """The pool full, then time just short of its holders' safe end, then just past their leases' expiry: the id
    goes to a third holder only then, one epoch higher (the history the model's invariants must see through)."""
    with mock_aws():
        model = WorkerLeases()
        for index in (0, 1):
            model.acquire(index, 0, False, None)
        model.time_passes(TTL_SECONDS * 1000 - MARGIN_MILLIS - 1)
        model.acquire(2, 1, False, None)
        assert model.holders[2].worker is None  # pool_full: both leases live
        model.no_two_believing_holders_share_an_id()
        model.epochs_only_grow_and_each_believer_is_leased()
        model.time_passes(MARGIN_MILLIS + 1)
        model.acquire(2, 1, False, None)
        assert model.holders[2].epoch == 2
        model.no_two_believing_holders_share_an_id()
        model.epochs_only_grow_and_each_believer_is_leased()
