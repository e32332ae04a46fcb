"""Series numbers per second against the local server, beside plain tickets (docs/reference/series.md).

One client (`TicketsClient`, one keep-alive connection) asks, for SECONDS each, in turn:
- plain tickets: `next()` without an Idempotency-Key (one conditional UpdateItem a ticket);
- tickets with an Idempotency-Key (the client's default: three writes a ticket);
- series numbers: `series()` (always with an Idempotency-Key: four calls a number, docs/explanation/series.md).
Every series number is checked afterwards: the audit (tickets_admin.journal) must be clean.

    python -m bench.series                          # the local server on its embedded moto
    python -m bench.series --endpoint-url URL       # on a DynamoDB-compatible endpoint (dynalite)
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

SECONDS = 5.0
CONFIG = {
    "regions": {"us-east-1": 0},
    "tableName": "bench-series",
    "counters": {"orders": {}},
    "series": {"invoices": {"start": 1, "format": "INV-{n:07}"}},
}


def measure(endpoint_url: str | None = None, seconds: float = SECONDS) -> dict[str, Any]:
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
        audit = _audit(server)
    plain = rates["plain tickets (no Idempotency-Key)"]
    return {
        "backend": endpoint_url or "moto (embedded)",
        "per_second": {name: round(value, 1) for name, value in rates.items()},
        "series_over_plain": round(rates["series numbers"] / plain, 2),
        "audit": audit,
    }


def rate(call: Any, seconds: float) -> float:
    """Calls of `call` per second over `seconds`, after 20 calls that warm it up."""
    for _ in range(20):  # warm: first calls build clients, tables' items
        call()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        call()
        count += 1
    return count / (time.perf_counter() - start)


def _audit(server: Any) -> list[str]:
    from tickets_admin.journal import SeriesTable

    audits = SeriesTable(server.app.dynamodb, server.deployment.series_table).audit("invoices")
    lines = [line for result in audits for line in result.lines()]
    if not all(result.clean for result in audits):
        raise SystemExit("the audit found numbers unaccounted or recorded twice:\n" + "\n".join(lines))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.series", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint-url", default=None)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    args = parser.parse_args()
    print(json.dumps(measure(args.endpoint_url, args.seconds), indent=2))


if __name__ == "__main__":
    main()
