"""`python -m bench.series [--endpoint-url URL] [--seconds S]`: series numbers per second beside plain tickets
(bench/README.md#series-numbers-beside-plain-tickets); then the series' audit must be clean."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

SECONDS = 5.0
CONFIG = {
    "regions": {"us-east-1": 0},
    "tableName": "bench-series",
    "counters": {"orders": {}},
    "series": {"invoices": {"start": 1, "format": "INV-{n:07}"}},
}


def measure(endpoint_url: str | None = None, seconds: float = SECONDS) -> dict[str, Any]:
    from tickets_admin.journal import SeriesTable
    from tickets_client import TicketsClient
    from tickets_local.server import LocalServer

    # The audit scans with a filter, which the memory backend does not implement: moto, unless an endpoint is given.
    backend = None if endpoint_url else "moto"
    with LocalServer(config=CONFIG, endpoint_url=endpoint_url, backend=backend, without_ledger=True) as server:
        client = TicketsClient(server.url)
        rates = {
            "plain tickets (no Idempotency-Key)": rate(lambda: client.next("orders", idempotent=False), seconds),
            "tickets with an Idempotency-Key": rate(lambda: client.next("orders"), seconds),
            "series numbers": rate(lambda: client.series("invoices", ref="bench"), seconds),
        }
        audits = SeriesTable(server.app.dynamodb, server.deployment.series_table).audit("invoices")
    lines = [line for result in audits for line in result.lines()]
    if not all(result.clean for result in audits):
        raise SystemExit("the audit found numbers unaccounted or recorded twice:\n" + "\n".join(lines))
    return {
        "backend": endpoint_url or "moto (embedded)",
        "per_second": {name: round(value, 1) for name, value in rates.items()},
        "series_over_plain": round(rates["series numbers"] / rates["plain tickets (no Idempotency-Key)"], 2),
        "audit": lines,
    }


def rate(call: Any, duration: float) -> float:
    """Calls of `call` per second over `duration` seconds, after 20 calls that warm it up."""
    for _ in range(20):
        call()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < duration:
        call()
        count += 1
    return count / (time.perf_counter() - start)


def seconds_of(call: Callable[[], Any]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.series", description=__doc__)
    parser.add_argument("--endpoint-url", default=None, help="a DynamoDB-compatible endpoint (default: embedded moto)")
    parser.add_argument("--seconds", type=float, default=SECONDS, help=f"per figure (default: {SECONDS})")
    print(json.dumps(measure(**vars(parser.parse_args())), indent=2))
