"""The function's Powertools Logger and Metrics: one of each per process, shared by the feature
modules through their services (services.py), and what an error and a series number add to the
request's metrics line."""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from .errors import TicketsError

# Lambda's own Invocations metric counts requests; a refusal or a state read adds no metric of ours.
warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
logger = Logger()
metrics = Metrics()


def count_error(err: TicketsError) -> None:
    """An error in the metrics line, by its code, and in the log (a 5xx as a warning)."""
    # `code` is one of a handful of fixed strings, so the dimension stays bounded.
    metrics.add_dimension(name="code", value=err.code)
    metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=1)
    log = logger.warning if err.status >= 500 else logger.info
    log("refused", extra={"status": err.status, "code": err.code, "error": err.message})


def series_metric(metrics: Metrics, name: str, key: str, series: str) -> None:
    """A count of one series' numbers, by key and series, in the request's metrics line (an invocation
    serves one request, and Powertools clears the dimensions after each line). Series are configured
    and periods few, so the dimensions stay bounded."""
    metrics.add_dimension(name="key", value=key)
    metrics.add_dimension(name="series", value=series)
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
