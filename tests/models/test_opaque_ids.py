"""Opaque ids in bulk (tickets.opaque), too slow for the unit tier (2 to 9 µs an id, bench/README.md): a
counter's first 10^6 tickets give 10^6 distinct, well-formed ids (TICKETS_OPAQUE_IDS sets the count; 1,000,000
unless set), and 10^5 of them carry no order (Spearman's rank correlation with the ticket near 0) and no
favourite character at any position (chi-square per position, tests/opaque_statistics.py). The keys are fixed, so
each statistic is one fixed number: the bounds say how unlikely a pseudorandom permutation is to pass them, each
time less than once in 10^6."""

from __future__ import annotations

import os

import pytest

from opaque_statistics import chi_square_above, luhn_valid, no_order_bound, position_p_values, spearman
from tickets.opaque import ALPHABETS, OpaqueConfig
from tickets_deploy.opaque_decode import OpaqueCodec

IDS = int(os.environ.get("TICKETS_OPAQUE_IDS", "1000000"))
SAMPLE = 100_000
KEY = bytes(range(32))
TEN_DIGITS_LUHN = OpaqueConfig(10, "digits", "luhn")  # 10^8 tickets per key version
CONFIGS = [TEN_DIGITS_LUHN, OpaqueConfig(12, "base32", "luhn", 4)]


def test_consecutive_tickets_give_distinct_well_formed_ids():
    ids = OpaqueCodec(TEN_DIGITS_LUHN, {1: KEY}, "orders")
    made = [ids.encode(ticket) for ticket in range(1, IDS + 1)]
    assert len(set(made)) == IDS
    symbols = ALPHABETS["digits"]
    assert all(len(each) == 10 and each.isdigit() for each in made)
    assert all(luhn_valid(each, symbols) for each in made[:: max(1, IDS // SAMPLE)])


@pytest.fixture(scope="module", params=CONFIGS, ids=str)
def sample(request) -> tuple[OpaqueConfig, list[str]]:
    """The ids of a counter's first 10^5 tickets (1 .. 10^5), key version 2."""
    config = request.param
    ids = OpaqueCodec(config, {2: KEY}, "orders")
    made = [ids.encode(ticket, 2) for ticket in range(1, SAMPLE + 1)]
    assert [ids.decode(each) for each in made[::97]] == [(ticket, 2) for ticket in range(1, SAMPLE + 1, 97)]
    return config, made


def test_ids_carry_no_order(sample):
    rho = spearman(sample[1])
    print(f"Spearman's rho of {SAMPLE} ids ({sample[0]}) with their tickets: {rho:+.5f}")
    assert abs(rho) < no_order_bound(SAMPLE)


def test_the_chi_square_tail_matches_the_tables():
    """NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.4 (upper critical values of the chi-square
    distribution): 9 degrees of freedom at 0.001: 27.877; 31 at 0.001: 61.098; 10 at 0.05: 18.307."""
    for x, df, tail in ((27.877, 9, 0.001), (61.098, 31, 0.001), (18.307, 10, 0.05), (21.666, 9, 0.01)):
        assert chi_square_above(x, df) == pytest.approx(tail, rel=2e-3)


def test_every_position_is_uniform(sample):
    config, made = sample
    for position, (statistic, p) in enumerate(position_p_values(made, ALPHABETS[config.alphabet]), 1):
        print(f"position {position}: chi-square {statistic:.1f}, p = {p:.3f}")
        assert p > 1e-7, f"position {position}: chi-square {statistic:.1f}"
