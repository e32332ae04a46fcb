"""What the feature modules' handlers are given: one deployment's services, built once by
`create_app` (app.py) and passed to every handler with the request."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

from . import observability
from .issuer import Issuer
from .settings import Settings
from .timing import Deadline

if TYPE_CHECKING:
    from .idempotency import IdempotentIssue
    from .series.store import SeriesStore


@dataclass
class Services:
    settings: Settings
    issuer: Issuer
    deadline: Deadline  # the request's: started by the handler, read by every DynamoDB call
    client: Any  # the DynamoDB client bound to the deadline
    idempotency_table: str
    journal: SeriesStore | None  # the series store, where the settings configure series
    region: str | None  # the one GET /_health names
    clock: Callable[[], datetime.datetime]
    metrics: Metrics = field(default_factory=lambda: observability.metrics)  # the request's one EMF line
    logger: Logger = field(default_factory=lambda: observability.logger)
    _idempotent_issue: IdempotentIssue | None = field(default=None, repr=False)

    def idempotent_issue(self) -> IdempotentIssue:
        """Powertools' idempotency around an issue, imported on first use: most requests carry no header."""
        if self._idempotent_issue is None:
            from .idempotency import idempotent

            self._idempotent_issue = idempotent(
                client=self.client,
                table_name=self.idempotency_table,
                expires_after_seconds=self.settings.idempotency_expiry_seconds,
            )
        return self._idempotent_issue
