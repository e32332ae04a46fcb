"""The README's table of configuration fields, rendered from the schema."""

from __future__ import annotations

from .schema import COUNTER_FIELDS, FIELDS, Field

# What the table says of a field no change may touch, and of one that changes only above a fence.
_PERMANENT = " **Permanent**"
_FENCED = " **Changes only above a fence** ([Changing a layout](docs/operations.md#changing-a-layout))"


def readme_table() -> str:
    """The README's table of fields (tests/test_config.py holds README.md to it)."""
    rows = ["| field | prop | default | meaning |", "| --- | --- | --- | --- |"]
    for each in FIELDS:  # `counters` itself is the rows of its fields, counters.K.<name>
        if each.name != "counters":
            rows.append(_row(each))
            continue
        rows += [_row(counter, "counters.K.", prop_prefix="counters[K].") for counter in COUNTER_FIELDS]
    return "\n".join(rows)


def _row(each: Field, prefix: str = "", prop_prefix: str = "") -> str:
    permanence = _FENCED if each.fenced else (_PERMANENT if each.permanent else "")
    prop = f"`{prop_prefix}{each.prop}`" if each.owner == "TicketService" else f"`{each.owner}(…, {each.prop}=…)`"
    if each.prop_doc:
        prop += f" ({each.prop_doc})"
    return f"| `{prefix}{each.name}` | {prop} | {each.default_doc} | {each.doc}{permanence} |"
