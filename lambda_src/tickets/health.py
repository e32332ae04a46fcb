"""GET /_health: what runs here, for probes and operators; calls nothing."""

from __future__ import annotations

from . import __version__, protocol
from .messages import Health
from .runtime import Runtime
from .wire import Request, Response, json_response


def health(runtime: Runtime, request: Request) -> Response:
    protocol.no_query_nor_body("GET /_health", request.raw_query_string, request.body)
    body: Health = {
        "status": "ok",
        "version": __version__,
        "region": runtime.region,
        "slot": runtime.settings.region_slot,
        "slots": runtime.settings.region_slots,
    }
    return json_response(200, body)
