"""Every failure a caller can see: an HTTP status, a stable code, and what to do."""

from __future__ import annotations

ECHO_CHARS = 40  # how much of a caller's input an error message repeats: enough to recognise it


def echo(value: object) -> str:
    """`value` as an error message quotes it (repr), cut to ECHO_CHARS characters, whatever the caller sent."""
    return clip(repr(value), length=len(value) if isinstance(value, str) else None)


def clip(text: str, limit: int = ECHO_CHARS, *, length: int | None = None) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) if length is None else length} characters)"


class TicketsError(Exception):
    """A failure a caller sees: a subclass declares its HTTP status and code (`class X(TicketsError, status=404)`)."""

    status = 500
    code = "internal_error"

    def __init_subclass__(cls, *, status: int | None = None, code: str | None = None) -> None:
        super().__init_subclass__()
        cls.status = status or cls.status
        cls.code = code or cls.code

    def __init__(self, message: str, *, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class BadRequest(TicketsError, status=400, code="bad_request"): ...


class OpaqueCounter(BadRequest, code="opaque_counter"): ...


class Forbidden(TicketsError, status=403, code="forbidden"): ...


class NotFound(TicketsError, status=404, code="not_found"): ...


class MethodNotAllowed(TicketsError, status=405, code="method_not_allowed"): ...


class Exhausted(TicketsError, status=409, code="exhausted"): ...


def exhausted(key: str, count: int, maximum: int, step: int) -> Exhausted:
    return Exhausted(
        f"counter {key!r} cannot issue {count} more ticket(s) without passing its max ({maximum}): a lane's "
        f"tickets are {step} apart (step: stride x regionSlots x shards); raise max in cdk.json, ask for fewer, "
        "or use a new key. Nothing was issued."
    )


class LeaseLost(TicketsError, status=409, code="lease_lost"): ...


class ConfigMismatch(TicketsError, status=409, code="config_mismatch"): ...


class RequestInProgress(TicketsError, status=409, code="in_progress"): ...


class PayloadTooLarge(TicketsError, status=413, code="too_large"): ...


class IdempotencyKeyReused(TicketsError, status=422, code="idempotency_key_reused"): ...


class Unavailable(TicketsError, status=503, code="unavailable"):
    def __init__(self, message: str):
        super().__init__(message, headers={"Retry-After": "1"})


class PoolFull(TicketsError, status=503, code="pool_full"): ...


class KeyReplaced(Unavailable, code="key_replaced"):
    """An opaque counter's key is not the one its first ids were made with (TicketAlarms' OpaqueKeyReplaced)."""
