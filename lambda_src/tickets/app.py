"""`create_app`, the one way to build the function (handler.py, tests, the local server, the bench): its runtime and
the dispatch by the route table (docs/explanation/design.md)."""

from __future__ import annotations

import datetime
import functools
import importlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config

from . import routes, timing
from .botocore_session import new_session
from .dispatch import Dispatcher, Handler
from .errors import TicketsError
from .issuer import Issuer
from .runtime import Runtime, logger, metrics
from .sequence import Lane
from .settings import Settings
from .store import CounterStore

if TYPE_CHECKING:
    from .access import Rules
    from .opaque.secret import StoredKeys


DYNAMODB_CONFIG = Config(
    # `total_max_attempts` counts every attempt (`max_attempts` only retries): timing.py's one.
    retries={"mode": "standard", "total_max_attempts": timing.DYNAMODB_MAX_ATTEMPTS},
    connect_timeout=timing.DYNAMODB_CONNECT_TIMEOUT_SECONDS,
    read_timeout=timing.DYNAMODB_READ_TIMEOUT_SECONDS,
    # Requests are built from validated input and DynamoDB validates again; botocore's check cost ~100 us a call.
    parameter_validation=False,
)

# Tracer() imports the X-Ray SDK (hundreds of ms of cold start): only where the stack turns tracing on.
tracer = Tracer() if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() not in ("1", "true") else None


def dynamodb_client(session: Any = None, **where: Any) -> Any:
    return (session or new_session()).create_client("dynamodb", config=DYNAMODB_CONFIG, **where)


@dataclass(frozen=True)
class App:
    """One deployment's function: Lambda calls `lambda_handler`; tests and the bench reach the rest."""

    dynamodb: Any  # the client as given (the runtime's goes through the request's deadline)
    issuer: Issuer
    dispatcher: Dispatcher
    lambda_handler: Callable[[dict[str, Any], Any], dict[str, Any]]  # (event, context) -> the Function URL's result


def create_app(
    settings: Settings,
    dynamodb: Any,
    counter_table: str,
    idempotency_table: str,
    *,
    shuffle: Callable[[list[Lane]], None] = random.shuffle,
    region: str | None = None,
    series_table: str | None = None,
    workers_table: str | None = None,
    clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    access: Callable[[], Rules] | None = None,
    opaque_keys: StoredKeys | None = None,
    config_name: str = "cdk.json",
) -> App:
    if settings.series and series_table is None:
        raise ValueError("these settings configure series: create_app needs their table (series_table)")
    if settings.workers and workers_table is None:
        raise ValueError("these settings configure worker pools: create_app needs their table (workers_table)")
    deadline = timing.Deadline()
    client = timing.DeadlineBoundClient(dynamodb, deadline)
    store = CounterStore(client, counter_table)
    issuer = Issuer(settings, store, shuffle, config_name)
    journal = None
    if settings.series and series_table:  # most functions serve none: the journal stays out of their cold start
        from .series.store import SeriesStore

        journal = SeriesStore(client, series_table)
    runtime = Runtime(
        settings=settings,
        issuer=issuer,
        deadline=deadline,
        client=client,
        idempotency_table=idempotency_table,
        journal=journal,
        workers_table=workers_table,
        region=region or os.environ.get("AWS_REGION"),
        clock=clock,
        access=access,
        opaque_keys=opaque_keys,
        counter_store=store,
    )
    served = routes.served(settings)
    dispatcher = Dispatcher(served, {route.handler: bind(route.handler) for route in served}, runtime, report)

    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        deadline.start(context.get_remaining_time_in_millis())
        # Set directly: a JMESPath correlation path costs more per call.
        logger.set_correlation_id(event.get("requestContext", {}).get("requestId"))
        return dispatcher.answer(event).to_result()

    traced = tracer.capture_lambda_handler(lambda_handler) if tracer is not None else lambda_handler
    return App(dynamodb, issuer, dispatcher, logger.inject_lambda_context(clear_state=True)(traced))


@functools.cache  # the same function every time: an app built again (the local server's reset) looks it up once
def bind(handler: str) -> Handler:
    module, function = handler.rsplit(".", 1)
    return cast("Handler", getattr(importlib.import_module(f".{module}", __package__), function))


def report(answered: TicketsError, raised: Exception) -> None:
    """A refusal's code in the metrics line (a handful: a bounded dimension) and the log, a crash's traceback too."""
    if answered is not raised:
        logger.exception("unhandled error")
    metrics.add_dimension(name="code", value=answered.code)
    metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=1)
    log = logger.warning if answered.status >= 500 else logger.info
    log("refused", extra={"status": answered.status, "code": answered.code, "error": answered.message})
