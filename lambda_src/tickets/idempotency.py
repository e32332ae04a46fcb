"""Idempotent retries with Powertools: a repeated Idempotency-Key gets the stored answer.

The record is keyed by the caller and the header (two callers who happen to pick the same
header value must not get each other's tickets); the request (route, key, count) is validated
against it, so the same header with a different request is refused rather than answered
wrongly. The caller is the signing principal, an assumed role without its session name: a
client's credentials refreshed by a new AssumeRole (a new session name) are the same caller.
Imported only when a request carries the header, so plain requests pay nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyInconsistentStateError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from .caller import caller
from .dynamodb_errors import Failure, classify
from .errors import IdempotencyKeyReused, RequestInProgress, TicketsError, Unavailable
from .protocol import Asked
from .tables import IDEMPOTENCY_KEY, IDEMPOTENCY_TTL

Issue = Callable[[], dict[str, Any]]  # checks what the config requires, issues, and answers
# (event, header, request: a ticket route's or as another route describes it, deadline, issue) -> the answer (run's)
IdempotentIssue = Callable[[dict[str, Any], str, Asked | dict[str, Any], Any, Issue], dict[str, Any]]


class _Recorded(Protocol):
    """`issue_once` as idempotent_function wraps it: the data must come as the keyword it names."""

    def __call__(self, *, call: dict[str, Any], issue: Issue) -> dict[str, Any]: ...


def idempotent(*, client: Any, table_name: str, expires_after_seconds: int, logger: Logger) -> IdempotentIssue:
    """Run an issue once per (caller, header): a stored answer is looked up before the issue runs, so
    whatever the issue checks (the config's limits) never stands between a retry and its answer. `logger` is
    the process's (tickets.runtime), given rather than imported: runtime imports this module on first use."""
    persistence = DynamoDBPersistenceLayer(
        table_name=table_name, boto3_client=client, key_attr=IDEMPOTENCY_KEY, expiry_attr=IDEMPOTENCY_TTL
    )
    config = IdempotencyConfig(
        event_key_jmespath="[caller, idempotency_key]",
        payload_validation_jmespath="request",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=expires_after_seconds,
    )

    # idempotent_function is typed to return Any; this is what its decorator makes of issue_once.
    record_once: Callable[[Callable[..., dict[str, Any]]], _Recorded] = idempotent_function(
        data_keyword_argument="call", persistence_store=persistence, config=config
    )

    @record_once
    def issue_once(call: dict[str, Any], issue: Issue) -> dict[str, Any]:
        return issue()

    def run(
        event: dict[str, Any], idempotency_key: str, request: Asked | dict[str, Any], deadline: Any, issue: Issue
    ) -> dict[str, Any]:
        config.register_lambda_context(deadline)  # so a crashed attempt's lock expires at its deadline
        recorded = request.recorded if isinstance(request, Asked) else request
        call = {"caller": caller(event), "idempotency_key": idempotency_key, "request": recorded}
        spent: list[bool] = []  # whether this attempt's issue ran to its end

        def issue_and_note() -> dict[str, Any]:
            answer = issue()
            spent.append(True)
            return answer

        try:
            return issue_once(call=call, issue=issue_and_note)
        except IdempotencyValidationError:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was already used for a different request (route, key or count); "
                "use a new Idempotency-Key for a new request"
            ) from None
        except (IdempotencyAlreadyInProgressError, IdempotencyInconsistentStateError):
            # Inconsistent: each time this request found another's lock, that lock was gone (or
            # expired) by the time it read it; that request ended without an answer to keep (a
            # refusal, a failure), and a retry now starts anew.
            raise RequestInProgress(
                "a request with this Idempotency-Key is still in flight; retry in a moment to get its answer"
            ) from None
        except IdempotencyPersistenceLayerError as err:
            _raise_persistence_failure(err, spent=bool(spent), logger=logger)

    return run


_REFUSED = "a misconfiguration (a denied role, a missing table) or a bug, logged"
# The issue ran and only its answer's save failed: the tickets are in the counter's `last`, in no answer.
_SPENT = "the tickets were taken, but their answer could not be saved ({why}): they are a gap, handed to no one. "


def _raise_persistence_failure(err: IdempotencyPersistenceLayerError, *, spent: bool, logger: Logger) -> NoReturn:
    """As the same failure on the counter table (dynamodb_errors.classify): 503 when a retry may pass, else the 500
    InternalErrors watches; each says whether the issue had taken its tickets (`spent`). The cause is the failure."""
    cause = err.__cause__
    transient = (
        not isinstance(cause, Exception) or isinstance(cause, TicketsError) or classify(cause) is Failure.UNAVAILABLE
    )
    if transient and spent:
        raise Unavailable(
            _SPENT.format(why="throttled, failed or out of time")
            + "The same Idempotency-Key gets 409 in_progress for seconds, then new tickets"
        ) from err
    if isinstance(cause, TicketsError):  # the deadline refused the lock's write (DeadlineBoundClient)
        raise cause
    if transient:
        raise Unavailable(
            "the idempotency store is unavailable; nothing was issued. Retry with the same Idempotency-Key "
            "(409 in_progress means: wait and retry)"
        ) from err
    logger.exception("the idempotency table refused a call")
    raise TicketsError(_SPENT.format(why=_REFUSED) if spent else f"nothing was issued: {_REFUSED}") from cause
