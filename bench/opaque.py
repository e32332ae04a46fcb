"""What opaque ids cost a warm call (bench/README.md, docs/explanation/opaque-ids.md): an opaque counter's one id
and list of 1,000 ids beside the same plain counter's tickets and the baseline, in warm.py's interleaved rounds, every
answer checked (the ids against the ones the counter's key makes). Its rounds' tables (tickets/opaque/ids.py) are filled
first by FILLED ids, as a busy function's are, except for `opaque_one_young`: a young function's, empty at first."""

from __future__ import annotations

import base64
import functools
import json
import statistics
import time
from typing import Any

from .environment import tickets_app
from .warm import StubbedHandler, median_us, plain_answer

TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
COUNTERS = {
    "bench-plain": {"start": 5000, "max": 99_999_999},
    "bench-opaque": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS},
}
LIST = 1000  # ids (and tickets) in a list request: the most one request may take
# Ids made before the rounds by the handlers measured warm: enough to fill their rounds' tables (10 digits: 10^4
# halves a round; 200,000 ids leave about e^-20 of them empty).
FILLED = 200_000
KEY = bytes(range(32))


def measure(rounds: int = 60, calls: int = 30, list_calls: int = 5, filled: int = FILLED) -> dict[str, Any]:
    """The baseline and five Tickets handlers in one interpreter (a child process, bench.child)."""
    from tickets.opaque import OpaqueConfig, OpaqueIds
    from tickets.opaque.secret import StoredKeys

    keys = StoredKeys(lambda: json.dumps({"1": base64.b64encode(KEY).decode()}), "the bench's key")
    ids = OpaqueIds(OpaqueConfig(10, "digits", "luhn"), {1: KEY}, "bench-opaque")  # to check the answers

    def opaque_answer(key: str, tickets: range) -> dict[str, Any]:
        made = ids.encode_all(tickets)
        return {"key": key, "id": made[0], **({"ids": made} if len(made) > 1 else {})}

    def tickets(key: str, count: int, answer: Any, made_before: int = 0) -> StubbedHandler:
        """A handler of its own (one Stubber per client), its opaque counter's rounds' tables filled by the ids of
        `made_before` tickets first (a busy function's steady state; 0: a young function's, empty)."""
        app = tickets_app(COUNTERS, opaque_keys=keys)
        runtime = app.dispatcher.runtime
        # The stubbed table answers only the issuing calls: the key's fingerprint reads back as recorded, as a
        # table whose first opaque id was made with this key answers (the function checks it once per process).
        runtime.counter_store.fingerprint = lambda version, digest: {"fingerprint": {"S": digest}}
        runtime.opaque_ids("bench-opaque", runtime.settings.counters["bench-opaque"]).encode_all(range(made_before))
        return StubbedHandler.tickets(app, key=key, count=count, answer=answer)

    handlers = {
        "baseline": StubbedHandler.baseline("bench-plain"),
        "plain_one": tickets("bench-plain", 1, plain_answer),
        "opaque_one_young": tickets("bench-opaque", 1, opaque_answer),
        "opaque_one": tickets("bench-opaque", 1, opaque_answer, filled),
        "plain_list": tickets("bench-plain", LIST, plain_answer),
        "opaque_list": tickets("bench-opaque", LIST, opaque_answer, filled),
    }
    us = median_us(
        rounds,
        {
            name: functools.partial(handler.run_round, list_calls if name.endswith("_list") else calls)
            for name, handler in handlers.items()
        },
    )
    ratio = {name: us[name] / us["baseline"] for name in handlers if name != "baseline"}
    return {
        "opaque_us": {**us, "calls_each": rounds * calls, "list_calls_each": rounds * list_calls, "list": LIST},
        "opaque_ratios": ratio,
        # What the ids add: the opaque call over the same plain call, less 1 (0.05: 5% more).
        "opaque_added_one": us["opaque_one"] / us["plain_one"] - 1,
        "opaque_added_one_young": us["opaque_one_young"] / us["plain_one"] - 1,
        "opaque_added_list": us["opaque_list"] / us["plain_list"] - 1,
        "opaque_filled": filled,
        # The least a list's ids could add in Python: one pass over its tickets (an id takes ten rounds, each more).
        "opaque_one_pass_us": one_pass_us(LIST),
    }


def one_pass_us(count: int, passes: int = 300) -> float:
    """The least one Feistel round costs a list of `count` tickets in Python: one pass over them, an add and a
    modulo each (no table, no hash), the median of `passes` passes in µs. Against the goal of 5% of the plain
    list's call, it says how far pure Python is from it before any id is made."""
    tickets = list(range(5000, 5000 + count))
    durations = []
    for _ in range(passes):
        started = time.perf_counter()
        [(ticket + 7919) % 10_000 for ticket in tickets]
        durations.append(time.perf_counter() - started)
    return 1e6 * statistics.median(durations)
