"""What the tests of opaque ids share, in every tier (tests/models/test_opaque_ids.py on the permutation alone,
tests/synth/test_opaque_stack.py on a synthesised stack's handler): the textbook Luhn check and the statistics
that say a list of ids carries no order (Spearman's rank correlation with the tickets) and favours no character
at any position (chi-square per position), with the bounds a pseudorandom permutation passes but for once in 10^6."""

from __future__ import annotations

import math
from collections import Counter


def luhn_valid(text: str, symbols: str) -> bool:
    """The textbook Luhn check, mod the alphabet's size (written apart from tickets.opaque's, to check it)."""
    radix, total = len(symbols), 0
    for position, symbol in enumerate(reversed(text)):
        code = symbols.index(symbol)
        if position % 2:
            code = sum(divmod(2 * code, radix))
        total += code
    return total % radix == 0


def spearman(made: list[str]) -> float:
    """Spearman's rho of the ids (fixed width: in text order is in value order) against the tickets' order."""
    n = len(made)
    rank = {each: at for at, each in enumerate(sorted(made))}
    squares = sum((rank[each] - at) ** 2 for at, each in enumerate(made))
    return 1 - 6 * squares / (n * (n * n - 1))


def no_order_bound(n: int) -> float:
    """Under independence rho is about normal with standard error 1/sqrt(n-1) (0.0032 for 10^5); |rho| below 5
    of them fails by chance with probability 5.7e-7."""
    return 5 / math.sqrt(n - 1)


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


def position_p_values(made: list[str], symbols: str) -> list[tuple[float, float]]:
    """At each of the ids' positions, the count of each character against n/R: (the chi-square statistic with R-1
    degrees of freedom, its p-value). A position's p-value above 1e-7: all of an id's positions pass by chance but
    for once in 10^6."""
    expected = len(made) / len(symbols)
    found = []
    for position in range(len(made[0])):
        counts = Counter(each[position] for each in made)
        statistic = sum((counts[symbol] - expected) ** 2 / expected for symbol in symbols)
        found.append((statistic, chi_square_above(statistic, len(symbols) - 1)))
    return found
