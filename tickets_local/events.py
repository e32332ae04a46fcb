"""HTTP request -> Function URL event (payload 2.0, tests/fixtures/function_url_event.json) -> HTTP response.
The event has no `requestContext.authorizer` unless the server plays callers (docs/reference/local-server.md)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import secrets
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from tickets.access import ASSUMED_ROLE_PATTERN, IAM_ARN_PATTERN, Identity
from tickets_deploy.access import ACCOUNT_PATTERN, ORGANIZATION_PATTERN, PRINCIPAL_RULE

# The caller a --play-callers server plays; the deployed function never reads it (only requestContext).
PLAY_CALLER_HEADER = "x-tickets-play-caller"
ACCOUNT_ID = "123456789012"  # moto's default account, so ARNs agree with the embedded DynamoDB
MAX_REQUEST_BYTES = 6 * 1024 * 1024  # Lambda's synchronous payload limit; AWS answers 413 past it
JSON_HEADERS = (("Content-Type", "application/json"), ("Cache-Control", "no-store"))  # the server's own answers
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class HttpRequest:
    """What the server read: the request line's target exactly as sent, headers in order."""

    method: str
    target: str
    protocol: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    server_port: int


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Sequence[tuple[str, str]]
    body: bytes


class PlayedCallerError(ValueError):
    """A request names a caller the server may not, or cannot, play."""


def played_caller(principal: str) -> dict[str, Any]:
    """The IAM authorizer's fields for a request signed by `principal` (a role ARN as one of its sessions, a session
    ARN, a user ARN, an account as its root, an organization as a user in it); each a signer with its own unique id."""
    arn = IAM_ARN_PATTERN.fullmatch(principal)
    session = ASSUMED_ROLE_PATTERN.fullmatch(principal)
    if arn is not None:
        account, kind, name = arn.groups()
        if kind == "user":
            return _signer(account, principal, _unique_id("AIDA", principal))
        # the role's unique id stands for the role, whatever the session (AWS: AROA...:SESSION)
        role = f"arn:{principal.split(':')[1]}:sts::{account}:assumed-role/{name}"
        return _signer(account, f"{role}/local", f"{_unique_id('AROA', role)}:local")
    if session is not None:
        role, _, session_name = principal.rpartition("/")
        return _signer(session.group(1), principal, f"{_unique_id('AROA', role)}:{session_name}")
    if ACCOUNT_PATTERN.fullmatch(principal):
        return _signer(principal, f"arn:aws:iam::{principal}:root", principal)  # the root's id: the account
    if ORGANIZATION_PATTERN.fullmatch(principal):
        user = f"arn:aws:iam::{ACCOUNT_ID}:user/{principal}"
        return {**_signer(ACCOUNT_ID, user, _unique_id("AIDA", user)), "principalOrgId": principal}
    raise PlayedCallerError(f"{PLAY_CALLER_HEADER}: cannot play {principal[:200]!r}: it must be {PRINCIPAL_RULE}")


def played_identity(headers: Any) -> Identity:
    """The caller a request plays, as the access rules see it; unsigned without one."""
    principal = headers.get(PLAY_CALLER_HEADER)
    return Identity.of({"requestContext": {"authorizer": {"iam": played_caller(principal)}}} if principal else {})


def _signer(account: str, user_arn: str, unique_id: str) -> dict[str, Any]:
    return {
        "accessKey": "ASIALOCAL",
        "accountId": account,
        "callerId": unique_id,
        "cognitoIdentity": None,
        "principalOrgId": None,
        "userArn": user_arn,
        "userId": unique_id,
    }


def _unique_id(prefix: str, principal: str) -> str:
    """An IAM-like unique id (AIDA... user, AROA... role: 21 characters), one per principal."""
    return prefix + hashlib.sha256(principal.encode()).hexdigest()[:17].upper()


def function_url_event(request: HttpRequest, *, now: float | None = None, play_callers: bool = False) -> dict[str, Any]:
    """The event for `request`; PlayedCallerError when it names a caller not played (never silently unsigned)."""
    now = time.time() if now is None else now
    raw_path, _, raw_query = request.target.partition("?")
    headers, cookies = _event_headers(request)
    played = headers.pop(PLAY_CALLER_HEADER, None)
    if played is not None and not play_callers:
        raise PlayedCallerError(
            f"{PLAY_CALLER_HEADER}: this server plays no callers; start it with --play-callers "
            "(tickets_local.testing.LocalTickets(play_callers=True))"
        )
    host = headers.get("host", f"127.0.0.1:{request.server_port}")
    domain_prefix = host.split(".", 1)[0]  # AWS: the URL id, the host's first label
    event: dict[str, Any] = {"version": "2.0", "routeKey": "$default", "rawPath": raw_path, "rawQueryString": raw_query}
    if cookies:
        event["cookies"] = cookies
    event["headers"] = headers
    if raw_query:
        event["queryStringParameters"] = _joined(parse_qsl(raw_query, keep_blank_values=True))
    event["requestContext"] = {
        "accountId": ACCOUNT_ID,
        "apiId": domain_prefix,
        "domainName": host,
        "domainPrefix": domain_prefix,
        "http": {
            "method": request.method,
            "path": raw_path,
            "protocol": request.protocol,
            "sourceIp": request.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": "$default",
        "stage": "$default",
        "time": _clf_time(now),
        "timeEpoch": int(now * 1000),
    }
    if played is not None:
        event["requestContext"]["authorizer"] = {"iam": played_caller(played)}
    text = _as_text(request.body, headers.get("content-type"))
    if request.body:
        event["body"] = text if text is not None else base64.b64encode(request.body).decode("ascii")
    event["isBase64Encoded"] = bool(request.body) and text is None
    return event


def event_from(
    template: dict[str, Any],
    path: str = "/",
    method: str = "GET",
    query: Any = None,
    headers: dict[str, str] | None = None,
    body: str | bytes | None = None,
    base64_body: bool = False,
    iam: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A recorded event `template` aimed at raw `path` with `method`, a new request id and these parts (for tests and
    the bench); a bytes body goes base64 as AWS sends binary, `iam` replaces the template's signer."""
    pairs = list(query.items()) if isinstance(query, dict) else list(query or [])
    event = copy.deepcopy(template)
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["requestId"] = str(uuid.uuid4())
    if iam is not None:
        event["requestContext"]["authorizer"] = {"iam": iam}
    event["rawQueryString"] = urlencode(pairs)
    if pairs:
        event["queryStringParameters"] = _joined(pairs)
    event["headers"].update({name.lower(): value for name, value in (headers or {}).items()})
    if isinstance(body, bytes):
        body, base64_body = base64.b64encode(body).decode("ascii"), True
    if body is not None:
        event["body"], event["isBase64Encoded"] = body, base64_body
    return event


def _as_text(body: bytes, content_type: str | None) -> str | None:
    """The body as text for `text/*` and `application/json` in UTF-8, as AWS passes it; None: base64."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if not (media_type.startswith("text/") or media_type == "application/json"):
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def http_response(result: Any) -> HttpResponse:
    """A Function URL's answer for the handler's result: a dict with `statusCode` as given (502 if malformed),
    anything else 200 with the value as JSON."""
    if not (isinstance(result, dict) and "statusCode" in result):
        return HttpResponse(200, [("Content-Type", "application/json")], json.dumps(result).encode())
    status = result["statusCode"]
    defaults: dict[str, Any] = {"headers": {}, "cookies": [], "body": ""}
    headers, cookies, body = (
        default if result.get(name) is None else result[name] for name, default in defaults.items()
    )
    if (
        type(status) is not int  # nor a bool
        or not 100 <= status <= 599
        or not isinstance(headers, dict)
        or not isinstance(cookies, list)
        or not isinstance(body, str)
    ):
        return error_response(502, "bad_gateway", "the function returned a malformed response")
    if result.get("isBase64Encoded"):
        try:
            payload = base64.b64decode(body, validate=True)
        except ValueError:  # binascii.Error included
            return error_response(502, "bad_gateway", "the function returned invalid base64 as its body")
    else:
        payload = body.encode("utf-8")
    lines = [(str(name), str(value)) for name, value in headers.items()]
    lines += [("Set-Cookie", str(cookie)) for cookie in cookies]
    return HttpResponse(status, lines, payload)


def error_response(status: int, code: str, message: str) -> HttpResponse:
    body = json.dumps({"error": code, "message": message}, separators=(",", ":")).encode()
    return HttpResponse(status, JSON_HEADERS, body)


def _event_headers(request: HttpRequest) -> tuple[dict[str, str], list[str]]:
    """Names lower-cased, repeats comma-joined, cookies split out, the front end's headers added, as AWS does."""
    received = [(name.lower(), value) for name, value in request.headers]
    cookies = [
        cookie.strip() for name, value in received if name == "cookie" for cookie in value.split(";") if cookie.strip()
    ]
    headers = _joined(pair for pair in received if pair[0] != "cookie")
    forwarded = headers.get("x-forwarded-for")
    headers["x-forwarded-for"] = f"{forwarded}, {request.source_ip}" if forwarded else request.source_ip
    headers["x-forwarded-proto"] = "http"
    headers["x-forwarded-port"] = str(request.server_port)
    headers.setdefault("x-amzn-trace-id", f"Root=1-{int(time.time()):08x}-{secrets.token_hex(12)}")
    return headers, cookies


def _joined(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for name, value in pairs:
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return joined


def _clf_time(epoch: float) -> str:
    """`22/Nov/2026:12:00:00 +0000`, with English month names whatever the locale."""
    t = time.gmtime(epoch)
    return f"{t.tm_mday:02d}/{_MONTHS[t.tm_mon - 1]}/{t.tm_year}:{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} +0000"
