"""The check every test's refusals pass (tests/conftest.py): no sentence starts in lower case after ". ". Here,
that it sees the case the issue found and leaves alone what is not a sentence's start."""

from __future__ import annotations

from common import lowercase_sentence_starts


def test_a_sentence_starting_in_lower_case_is_found():
    message = "counters.orders.start: the ledger records 300, cdk.json says 301. every lane's first ticket moves"
    assert lowercase_sentence_starts(message) == ["records 300, cdk.json says 301. every"]
    assert lowercase_sentence_starts("Nothing was issued. ask for fewer") == ["Nothing was issued. ask"]


def test_identifiers_quoted_values_commands_and_abbreviations_are_not_sentences():
    for message in (
        "the ledger records 1, cdk.json says 2. Every lane moves",
        "cdk.json says 2. cdk.json is read, tickets_admin raise. `make init` writes one.",
        "invalid key 'a. b': keep it; \"x. y\" as written",
        "a field, e.g. start, i.e. the first; and so on, etc. and more... and more",
    ):
        assert lowercase_sentence_starts(message) == [], message
