"""The README's table of configuration fields, rendered from the schema."""

from __future__ import annotations

from .schema import COUNTER_FIELDS, FIELDS


def readme_table() -> str:
    """The README's table of fields (tests/test_config.py holds README.md to it)."""
    rows = ["| field | prop | default | meaning |", "| --- | --- | --- | --- |"]
    for each in FIELDS:  # `counters` itself is the rows of its fields, counters.K.<name>
        if each.name != "counters":
            rows.append(each.readme_row())
            continue
        rows += [counter.readme_row("counters.K.", prop_prefix="counters[K].") for counter in COUNTER_FIELDS]
    return "\n".join(rows)
