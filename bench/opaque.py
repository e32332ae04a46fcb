"""What opaque ids cost a warm call (bench/README.md#opaque-ids-before-and-after), every id checked against the
ones the counter's key makes."""

from __future__ import annotations

import base64
import json
import statistics
from typing import Any

from .environment import tickets_app
from .series import seconds_of
from .warm import Rounds, baseline_rounds, median_us, plain_answer, tickets_rounds

TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
COUNTERS = {
    "bench-plain": {"start": 5000, "max": 99_999_999},
    "bench-opaque": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS},
}
LIST = 1000  # the most one request may take
# Ids made first, as a busy function's: enough to fill the rounds' tables (10^4 entries; leaves about e^-20 empty).
FILLED = 200_000
KEY = bytes(range(32))


def measure(rounds: int = 60, calls: int = 30, list_calls: int = 5, filled: int = FILLED) -> dict[str, Any]:
    from tickets.opaque import OpaqueConfig, OpaqueIds
    from tickets.opaque.secret import StoredKeys

    keys = StoredKeys(lambda: json.dumps({"1": base64.b64encode(KEY).decode()}), "the bench's key")
    ids = OpaqueIds(OpaqueConfig(**TEN_DIGITS), {1: KEY}, "bench-opaque")  # to check the answers

    def opaque_answer(key: str, tickets: range) -> dict[str, Any]:
        made = ids.encode_all(tickets)
        return {"key": key, "id": made[0], **({"ids": made} if len(made) > 1 else {})}

    def tickets(key: str, count: int, answer: Any, made_before: int = 0) -> Rounds:
        """A handler of its own (a Stubber per client) whose rounds' tables hold `made_before` tickets' ids."""
        app = tickets_app(COUNTERS, opaque_keys=keys)
        runtime = app.dispatcher.runtime
        # The key's fingerprint reads back as recorded (the stubbed table answers only the issuing calls).
        runtime.counter_store.fingerprint = lambda version, digest: {"fingerprint": {"S": digest}}
        runtime.opaque_ids("bench-opaque", runtime.settings.counters["bench-opaque"]).encode_all(range(made_before))
        return tickets_rounds(app, key=key, count=count, answer=answer)

    handlers = {  # each with its calls a round
        "baseline": (baseline_rounds("bench-plain"), calls),
        "plain_one": (tickets("bench-plain", 1, plain_answer), calls),
        "opaque_one_young": (tickets("bench-opaque", 1, opaque_answer), calls),
        "opaque_one": (tickets("bench-opaque", 1, opaque_answer, filled), calls),
        "plain_list": (tickets("bench-plain", LIST, plain_answer), list_calls),
        "opaque_list": (tickets("bench-opaque", LIST, opaque_answer, filled), list_calls),
    }
    us = median_us(rounds, handlers)
    return {
        "opaque_us": {**us, "calls_each": rounds * calls, "list_calls_each": rounds * list_calls, "list": LIST},
        "opaque_ratios": {name: us[name] / us["baseline"] for name in handlers if name != "baseline"},
        "opaque_added_one": us["opaque_one"] / us["plain_one"] - 1,
        "opaque_added_one_young": us["opaque_one_young"] / us["plain_one"] - 1,
        "opaque_added_list": us["opaque_list"] / us["plain_list"] - 1,
        "opaque_filled": filled,
        "opaque_one_pass_us": one_pass_us(LIST),
    }


def one_pass_us(count: int, passes: int = 300) -> float:
    """The least one Feistel round costs `count` tickets in Python (an id takes ten): one pass, an add and a modulo
    each, the median of `passes` passes in µs."""
    tickets = list(range(5000, 5000 + count))
    return 1e6 * statistics.median(
        seconds_of(lambda: [(ticket + 7919) % 10_000 for ticket in tickets]) for _ in range(passes)
    )
