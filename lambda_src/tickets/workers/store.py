"""The one place that talks to the workers table (docs/explanation/worker-leases.md): an item per (pool, worker id),
never deleted; each grant and renewal one conditional UpdateItem; a read only suggests which id to try."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .. import dynamodb_errors
from ..errors import LeaseLost, PoolFull
from ..messages import LiveLease, WorkerLease
from ..tables import SERIES_PARTITION_KEY, SERIES_SORT_KEY
from .config import PoolConfig, free_workers, retry_after_seconds

_UNAVAILABLE = dynamodb_errors.UnavailableMessages(
    throttled="the workers table is throttled or unavailable; retry after the Retry-After delay",
    no_answer="the workers table did not answer in time; a lease may have been granted that no one holds (it "
    "expires after the pool's ttl); retry after the Retry-After delay",
)
_NAMES = {"#pk": SERIES_PARTITION_KEY, "#n": SERIES_SORT_KEY, "#e": "epoch", "#x": "expiresAt", "#o": "owner"}
_NAMES["#f"] = "freeAt"  # a released id is granted again only from then: its holder's margin, as at an expiry
FIRST_PAGE = 64  # items the first read of a search takes: enough to find a free id in all but a nearly full pool
_GRANT = "SET #e = if_not_exists(#e, :zero) + :one, #x = :expires"
# Never granted, or expired by this function's clock, and past a release's hand-over gap.
_FREE = "(attribute_not_exists(#e) OR #x <= :now) AND (attribute_not_exists(#f) OR #f <= :now)"
_HELD = "#e = :epoch AND #x > :now"  # the lease of that epoch, unexpired


@dataclass(frozen=True)
class Lease:
    worker: int
    epoch: int
    expires_at: int  # ms, by the service's clock
    owner: str | None
    free_at: int = 0  # after a release: when the id may be granted again

    @classmethod
    def of(cls, item: dict[str, Any]) -> Lease:
        owner, free_at = item.get("owner", {}).get("S"), int(item.get("freeAt", {}).get("N", 0))
        return cls(
            int(item[SERIES_SORT_KEY]["N"]), int(item["epoch"]["N"]), int(item["expiresAt"]["N"]), owner, free_at
        )

    def granted(self, pool: str, config: PoolConfig) -> WorkerLease:
        expires, ttl = self.expires_at, config.ttl_seconds
        return WorkerLease(pool=pool, worker=self.worker, epoch=self.epoch, expiresAt=expires, ttlSeconds=ttl)

    def live(self) -> LiveLease:
        return {"worker": self.worker, "epoch": self.epoch, "owner": self.owner, "expiresAt": self.expires_at}


@dataclass(frozen=True)
class WorkerStore:
    client: Any
    table: str

    def acquire(self, pool: str, config: PoolConfig, owner: str | None, now: int) -> Lease:
        start, live = random.randrange(config.size), list[int]()
        update = _GRANT + (", #o = :owner" if owner else " REMOVE #o")
        values = {":zero": 0, ":one": 1, ":expires": now + config.ttl_seconds * 1000, ":now": now}
        for low, high in ((start, config.size), (0, start)):
            leases = (Lease.of(item) for item in self._items(pool, low, high, FIRST_PAGE))
            taken = ((each.worker, max(each.expires_at, each.free_at)) for each in leases)
            for worker in free_workers(taken, low, high, now, live):
                granted = self._update(pool, worker, update, _FREE, values | ({":owner": owner} if owner else {}))
                if granted is not None:
                    return granted
        seconds = retry_after_seconds(live, now, config.ttl_seconds)
        full = f"every id of pool {pool!r} is leased; the earliest lease expires in {seconds} s: retry then"
        raise PoolFull(full, headers={"Retry-After": str(seconds)})

    def renew(self, pool: str, worker: int, epoch: int, config: PoolConfig, now: int) -> Lease:
        values = {":expires": now + config.ttl_seconds * 1000, ":epoch": epoch, ":now": now}
        renewed = self._update(pool, worker, "SET #x = :expires", _HELD, values)
        if renewed is None:
            raise LeaseLost(f"worker {worker}'s lease at epoch {epoch} expired or was granted again: stop using it")
        return renewed

    def release(self, pool: str, worker: int, epoch: int, config: PoolConfig, now: int) -> bool:
        # A released id waits out the clients' margin (docs/explanation/worker-leases.md#what-a-holder-must-do).
        values = {":zero": 0, ":free": now + max(1000, config.ttl_seconds * 100), ":epoch": epoch, ":now": now}
        return self._update(pool, worker, "SET #x = :zero, #f = :free", _HELD, values) is not None

    def leases(self, pool: str, size: int, now: int) -> list[Lease]:
        return [lease for item in self._items(pool, 0, size) if (lease := Lease.of(item)).expires_at > now]

    def _items(self, pool: str, low: int, high: int, first_page: int = 0) -> Iterator[dict[str, Any]]:
        names = {name: _NAMES[name] for name in ("#pk", "#n")}
        request: dict[str, Any] = {
            "TableName": self.table,
            "ExpressionAttributeNames": names,
            "KeyConditionExpression": "#pk = :pool AND #n BETWEEN :low AND :high",
            "ConsistentRead": True,  # a stale page would miss an id just freed, or answer pool_full for nothing
            "ExpressionAttributeValues": _values({":pool": pool, ":low": low, ":high": high - 1}),
            **({"Limit": first_page} if first_page else {}),
        }
        while low < high:
            page = dynamodb_errors.call(self.client, "query", request, _UNAVAILABLE)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
            request.pop("Limit", None)  # past the first page, as much as a page holds

    def _update(self, pool: str, worker: int, update: str, condition: str, values: dict[str, Any]) -> Lease | None:
        used = f"{update} {condition}"
        request = {
            "TableName": self.table,
            "Key": _values({SERIES_PARTITION_KEY: pool, SERIES_SORT_KEY: worker}),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ReturnValues": "ALL_NEW",
            "ExpressionAttributeNames": {name: value for name, value in _NAMES.items() if name in used},
            "ExpressionAttributeValues": _values(values),
        }
        response = dynamodb_errors.conditional(self.client, "update_item", request, _UNAVAILABLE)
        return None if response is None else Lease.of(response["Attributes"])


def _values(values: dict[str, Any]) -> dict[str, Any]:
    return {name: {"S": value} if isinstance(value, str) else {"N": str(value)} for name, value in values.items()}
