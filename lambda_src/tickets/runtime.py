"""What every handler is given (built by create_app), and the process's Logger and Metrics."""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from .access import Identity
from .errors import Forbidden, KeyReplaced, Unavailable, echo
from .idempotency import Issue, once
from .issuer import Issuer
from .keys import require_idempotency_key
from .settings import Settings
from .timing import Deadline
from .wire import Request

if TYPE_CHECKING:
    from .access import Rules
    from .messages import OpaqueState
    from .opaque import OpaqueIds
    from .opaque.secret import StoredKeys
    from .protocol import Asked
    from .series.store import SeriesStore
    from .settings import CounterConfig


# Lambda's Invocations metric counts requests; a refusal or a state read adds none of ours.
warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
logger = Logger()
metrics = Metrics()


@dataclass
class Runtime:
    settings: Settings
    issuer: Issuer
    deadline: Deadline  # the request's
    client: Any  # the DynamoDB client bound to the deadline
    idempotency_table: str
    journal: SeriesStore | None  # where the settings configure series
    workers_table: str | None  # where the settings configure pools
    region: str | None
    clock: Callable[[], datetime.datetime]
    metrics: Metrics = field(default_factory=lambda: metrics)  # the request's one EMF line
    logger: Logger = field(default_factory=lambda: logger)
    access: Callable[[], Rules] | None = None  # None: every invoker may do everything
    opaque_keys: StoredKeys | None = None  # None: opaque counters answer 503
    counter_store: Any = None  # records a key version's fingerprint
    _opaque_ids: dict[tuple[str, Any], OpaqueIds] = field(default_factory=dict, repr=False)

    def authorize(self, request: Request, key: str) -> None:
        if self.access is None:
            return
        identity = Identity.of(request.event)
        if not self.access().allows(identity, request.operation, key):
            self.metrics.add_metric(name="Forbidden", unit=MetricUnit.Count, value=1)
            raise Forbidden(
                f"{identity.describe()} may not {request.operation} key {echo(key)}: no access rule of this "
                "deployment allows it. Nothing was done; ask for a rule (docs/how-to/access-rules.md)"
            )

    def opaque_ids(self, key: str, counter: CounterConfig) -> OpaqueIds:
        """The ids of the opaque counter `key` under its key version, made once per process."""
        assert counter.opaque is not None
        made = self._opaque_ids.get((key, counter.opaque))
        if made is None:
            from .opaque import OpaqueIds
            from .opaque.secret import fingerprint, replaced

            if self.opaque_keys is None:
                raise Unavailable(f"this function has no keys of opaque ids, and {key!r} is opaque: nothing issued")
            version = counter.opaque.key_version
            secret = self.opaque_keys.keys(version)[version]
            recorded = self.counter_store.fingerprint(version, fingerprint(secret))
            if problem := replaced(version, secret, recorded, self.opaque_keys.where):
                raise KeyReplaced(problem)
            made = OpaqueIds(counter.opaque, {version: secret}, key)
            self._opaque_ids[(key, counter.opaque)] = made
        return made

    def opaque_state(self, counter: CounterConfig) -> OpaqueState:
        """What GET /_counters/{key} says of an opaque counter: never a key, only which versions are held."""
        assert counter.opaque is not None
        held = self.opaque_keys.held() if self.opaque_keys is not None else None
        opaque = counter.opaque
        return {"keyVersion": opaque.key_version, "idsPerVersion": opaque.ids_per_version, "keyVersionsHeld": held}

    def once(self, request: Request, described: Asked | dict[str, Any], issue: Issue) -> dict[str, Any]:
        """`issue()`, once per Idempotency-Key when the request has one."""
        header = request.headers.get("idempotency-key")
        if header is None:
            return issue()
        return once(self, request.event, require_idempotency_key(header), described, issue)
