"""Opaque ids in bulk (tickets.opaque), too slow for the unit tier (about 8 µs an id on an idle machine): a
counter's first 10^6 tickets give 10^6 distinct, well-formed ids (TICKETS_OPAQUE_IDS sets the count; 1,000,000
unless set), and 10^5 of them carry no order (Spearman's rank correlation with the ticket near 0) and no
favourite character at any position (chi-square per position). The keys are fixed, so each statistic is one
fixed number: the bounds say how unlikely a pseudorandom permutation is to pass them, each time less than once
in 10^6."""

from __future__ import annotations

import math
import os
from collections import Counter

import pytest

from tickets.opaque import ALPHABETS, OpaqueConfig, OpaqueIds

IDS = int(os.environ.get("TICKETS_OPAQUE_IDS", "1000000"))
SAMPLE = 100_000
KEY = bytes(range(32))
TEN_DIGITS_LUHN = OpaqueConfig(10, "digits", "luhn")  # 10^8 tickets per key version
CONFIGS = [TEN_DIGITS_LUHN, OpaqueConfig(12, "base32", "luhn", 4)]


def luhn_valid(text: str, symbols: str) -> bool:
    """The textbook Luhn check, mod the alphabet's size (written apart from tickets.opaque's, to check it)."""
    radix, total = len(symbols), 0
    for position, symbol in enumerate(reversed(text)):
        code = symbols.index(symbol)
        if position % 2:
            code = sum(divmod(2 * code, radix))
        total += code
    return total % radix == 0


def test_consecutive_tickets_give_distinct_well_formed_ids():
    ids = OpaqueIds(TEN_DIGITS_LUHN, {1: KEY}, "orders")
    made = [ids.encode(ticket) for ticket in range(1, IDS + 1)]
    assert len(set(made)) == IDS
    symbols = ALPHABETS["digits"]
    assert all(len(each) == 10 and each.isdigit() for each in made)
    assert all(luhn_valid(each, symbols) for each in made[:: max(1, IDS // SAMPLE)])


@pytest.fixture(scope="module", params=CONFIGS, ids=str)
def sample(request) -> tuple[OpaqueConfig, list[str]]:
    """The ids of a counter's first 10^5 tickets (1 .. 10^5), key version 2."""
    config = request.param
    ids = OpaqueIds(config, {2: KEY}, "orders")
    made = [ids.encode(ticket, 2) for ticket in range(1, SAMPLE + 1)]
    assert [ids.decode(each) for each in made[::97]] == [(ticket, 2) for ticket in range(1, SAMPLE + 1, 97)]
    return config, made


def spearman(made: list[str]) -> float:
    """Spearman's rho of the ids (fixed width: in text order is in value order) against the tickets' order."""
    n = len(made)
    rank = {each: at for at, each in enumerate(sorted(made))}
    squares = sum((rank[each] - at) ** 2 for at, each in enumerate(made))
    return 1 - 6 * squares / (n * (n * n - 1))


def test_ids_carry_no_order(sample):
    """Under independence rho is about normal with standard error 1/sqrt(n-1) (0.0032 for 10^5); |rho| below 5
    of them fails by chance with probability 5.7e-7."""
    rho = spearman(sample[1])
    print(f"Spearman's rho of {SAMPLE} ids ({sample[0]}) with their tickets: {rho:+.5f}")
    assert abs(rho) < 5 / math.sqrt(SAMPLE - 1)


def chi_square_above(x: float, df: int) -> float:
    """P(X > x) for chi-square with df degrees of freedom, in closed form (Abramowitz and Stegun 26.4.4 for odd
    df, 26.4.21 for even)."""
    if df % 2 == 0:
        term = total = 1.0
        for j in range(1, df // 2):
            term *= x / 2 / j
            total += term
        return math.exp(-x / 2) * total
    chi, term, total = math.sqrt(x), math.sqrt(x), 0.0
    for j in range(1, (df - 1) // 2 + 1):
        total += term
        term *= x / (2 * j + 1)
    return math.erfc(chi / math.sqrt(2)) + math.sqrt(2 / math.pi) * math.exp(-x / 2) * total


def test_the_chi_square_tail_matches_the_tables():
    """NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.4 (upper critical values of the chi-square
    distribution): 9 degrees of freedom at 0.001: 27.877; 31 at 0.001: 61.098; 10 at 0.05: 18.307."""
    for x, df, tail in ((27.877, 9, 0.001), (61.098, 31, 0.001), (18.307, 10, 0.05), (21.666, 9, 0.01)):
        assert chi_square_above(x, df) == pytest.approx(tail, rel=2e-3)


def test_every_position_is_uniform(sample):
    """At each of the id's positions, the count of each character against n/R: chi-square with R-1 degrees of
    freedom. Each position's p-value must be above 1e-7: all 10 or 12 pass by chance but for once in 10^6."""
    config, made = sample
    symbols = ALPHABETS[config.alphabet]
    expected = SAMPLE / len(symbols)
    for position in range(config.width):
        counts = Counter(each[position] for each in made)
        statistic = sum((counts[symbol] - expected) ** 2 / expected for symbol in symbols)
        p = chi_square_above(statistic, len(symbols) - 1)
        print(f"position {position + 1}: chi-square {statistic:.1f} ({len(symbols) - 1} df), p = {p:.3f}")
        assert p > 1e-7, f"position {position + 1}: chi-square {statistic:.1f}"
