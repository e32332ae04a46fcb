"""Schemathesis hooks for tests/functional/test_openapi.py (loaded through SCHEMATHESIS_HOOKS).

openapi.json states three request rules in words, because JSON Schema describes each parameter
on its own and cannot relate one to another:
- the key may be named by the path, the query (`key`, `systemKey`) and the body, which must agree;
- a query `count` and a body `count` must agree;
- an Idempotency-Key names one request: the same header with another key, count or route (a block on
  /_blocks/{key} is not a list of tickets) is 422;
- the compatibility route (tag `compat`, at the configured path) needs a key (`systemKey`, `key` or the
  body's), any of them;
- a series route (tag `series`) serves only the configured series (local_support.SERIES_KEY), and a
  void names a number the series issued (the hook takes one);
- a worker route (tag `workers`) serves only the configured pool (POOL), and a renewal or a release names a
  lease held, its worker id and epoch (the hook takes one).
With TICKETS_PLAY_CALLER set (a server started with --play-callers, its access rules enforced; schemathesis's
own requests carry the caller through its --header option), the hook's own requests are signed by it too.
Schemathesis draws every parameter independently, so a request it means to be valid breaks these
rules by chance and is rightly refused (400, 422), which its positive_data_acceptance check would
report. This hook makes such requests keep the rules, and nothing else: the values stay the ones drawn
(the first key named wins), and requests meant to be invalid are sent exactly as drawn.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import unquote

import schemathesis

IDEMPOTENCY_HEADER = "Idempotency-Key"
COMPAT_TAG = "compat"  # the compatibility route's tag, whatever its configured path
SERIES_TAG = "series"
PLAY_CALLER_HEADER = "x-tickets-play-caller"  # tickets_local.events (not imported: this runs in schemathesis)
PLAYED_CALLER = os.environ.get("TICKETS_PLAY_CALLER")
SERIES_KEY = "vat-invoices"  # the series of local_support.TICKETS_CONFIG (not imported: this runs in schemathesis)
WORKERS_TAG = "workers"
POOL = "snowflake"  # the pool of tests/functional/test_openapi.py's configs, every worker id in range


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return
    query = case.query if isinstance(case.query, MutableMapping) else {}
    body = case.body if isinstance(case.body, MutableMapping) else {}
    key = _agreed_key(case, query, body)
    if "count" in query and "count" in body:
        body["count"] = int(query["count"])
    if SERIES_TAG in (case.operation.tags or []):
        case.path_parameters = {**(case.path_parameters or {}), "key": SERIES_KEY}
        key = SERIES_KEY
        if case.operation.path.endswith("/void"):
            _void_an_issued_number(context, case, body)
    if WORKERS_TAG in (case.operation.tags or []):
        case.path_parameters = {**(case.path_parameters or {}), "pool": POOL}
        key = POOL
        if "worker" in case.path_parameters:  # a renewal or a release: of a lease held
            lease = _post(case, f"/_workers/{POOL}", {})
            case.path_parameters["worker"], body["epoch"] = lease["worker"], lease["epoch"]
    _one_request_per_idempotency_key(case, key, query, body)


def _agreed_key(case: Any, query: MutableMapping[str, Any], body: MutableMapping[str, Any]) -> str | None:
    """The first key the request names, written into every other place that names one."""
    path_key = (case.path_parameters or {}).get("key")
    if isinstance(path_key, str):
        # A stateful step's link copies the key from the previous request's path, still percent-encoded
        # ("70E9%3A"), and sends it as it is; the server reads "70E9:". No key holds a "%" (keys.KEY_PATTERN).
        path_key = unquote(path_key)
    named = [path_key, query.get("key"), query.get("systemKey"), body.get("key")]
    key = next((name for name in named if isinstance(name, str)), None)
    if key is None and COMPAT_TAG in (case.operation.tags or []):
        key = query["systemKey"] = "compat"  # none was drawn: name one, as the route requires
        case.query = query
    if key is not None:
        for name in ("key", "systemKey"):
            if name in query:
                query[name] = key
        if "key" in body:
            body["key"] = key
    return key


def _one_request_per_idempotency_key(
    case: Any, key: str | None, query: MutableMapping[str, Any], body: MutableMapping[str, Any]
) -> None:
    headers = case.headers if isinstance(case.headers, MutableMapping) else {}  # a CaseInsensitiveDict
    if IDEMPOTENCY_HEADER in headers:
        # Still drawn, and still repeated whenever the same request is drawn twice (a replay); but
        # never the same header for two different requests.
        count = query.get("count", body.get("count", 1))
        drawn = [headers[IDEMPOTENCY_HEADER], case.operation.path, key, str(count), body.get("ref"), body.get("owner")]
        request = json.dumps(drawn)
        headers[IDEMPOTENCY_HEADER] = hashlib.sha256(request.encode()).hexdigest()


def _void_an_issued_number(context: Any, case: Any, body: MutableMapping[str, Any]) -> None:
    """A void names a number the series issued: take one (a real POST /_series/{key}) and name it."""
    idempotency_key = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
    number = _post(case, f"/_series/{SERIES_KEY}", {IDEMPOTENCY_HEADER: idempotency_key})
    body["series"], body["ticket"] = number["series"], number["ticket"]


def _post(case: Any, path: str, headers: dict[str, str]) -> Any:
    """A real POST to the server under test (signed by the played caller, when there is one): its JSON answer."""
    import urllib.request

    played = {PLAY_CALLER_HEADER: PLAYED_CALLER} if PLAYED_CALLER is not None else {}
    request = urllib.request.Request(f"{case.operation.base_url or ''}{path}", method="POST", headers=headers | played)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())
