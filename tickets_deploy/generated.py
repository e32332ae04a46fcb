"""What `make generated` writes from the schema: docs/reference/configuration.md's table, tickets_cdk/props.py."""

from __future__ import annotations

from .field import Field
from .schema import COUNTER_FIELDS, FIELDS

_PERMANENT = " **Permanent**"
_FENCED = " **Changes only above a fence** ([change a layout](../how-to/change-a-layout.md))"
_RECORDED = " *Recorded*"


TABLE_HEADER = "| field | prop | default | meaning |"


def with_configuration_table(page: str, table: str) -> str:
    start = page.index(TABLE_HEADER)
    end = page.index("\n\n", start)
    return page[:start] + table + page[end:]


def configuration_table() -> str:
    """Its links are relative to docs/reference/configuration.md."""
    rows = [TABLE_HEADER, "| --- | --- | --- | --- |"]
    for each in FIELDS:  # `counters` itself is the rows of its fields, counters.K.<name>
        if each.name != "counters":
            rows.append(_row(each))
            continue
        rows += [_row(counter, "counters.K.", prop_prefix="counters[K].") for counter in COUNTER_FIELDS]
    return "\n".join(rows)


def _row(each: Field, prefix: str = "", prop_prefix: str = "") -> str:
    permanence = _FENCED if each.fenced else (_PERMANENT if each.permanent else (_RECORDED if each.recorded else ""))
    prop = f"`{prop_prefix}{each.prop}`" if each.owner == "TicketService" else f"`{each.owner}(…, {each.prop}=…)`"
    if each.prop_doc:
        prop += f" ({each.prop_doc})"
    return f"| `{prefix}{each.name}` | {prop} | {each.shown_default} | {each.doc}{permanence} |"


_PROPS_HEADER = '''"""The construct's typed props: cdk.json's `tickets` fields in snake_case (None: the default).
Generated from tickets_deploy.schema by `make generated`: change the schema (docs/reference/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from tickets.series.config import SeriesConfig
from tickets.settings import CounterConfig
from tickets.workers.config import PoolConfig
from tickets_deploy.field import Seconds


class TicketServiceProps(TypedDict, total=False):
'''


def props_module() -> str:
    lines = []
    for each in FIELDS:
        if each.owner != "TicketService":
            continue
        if each.prop_doc:
            lines.append(f"    # {each.prop_doc}\n")
        lines.append(f"    {each.prop}: {each.prop_type} | None\n")
    return _PROPS_HEADER + "".join(lines)
