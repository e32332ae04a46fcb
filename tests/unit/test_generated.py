"""The files written from the schema are what it writes now (tickets_deploy/generated.py; `make generated`
writes them again): docs/reference/configuration.md's table of fields and the construct's typed props."""

from __future__ import annotations

import typing
from pathlib import Path

from tickets_cdk.props import TicketServiceProps
from tickets_deploy.generated import TABLE_HEADER, configuration_table, props_module, with_configuration_table
from tickets_deploy.schema import FIELDS

ROOT = Path(__file__).resolve().parents[2]
STALE = "is out of date: run `make generated` (tools/generate.py) and commit what it writes"


def test_the_configuration_reference_s_table_is_the_schemas():
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert with_configuration_table(page, configuration_table()) == page, (
        f"docs/reference/configuration.md's table of fields {STALE}"
    )
    assert page.count(TABLE_HEADER) == 1


def test_the_typed_props_are_the_schemas():
    assert (ROOT / "tickets_cdk" / "props.py").read_text(encoding="utf-8") == props_module(), (
        f"tickets_cdk/props.py {STALE}"
    )
    # What the construct's signature gives mypy: every TicketService prop of the schema, each optional.
    hints = typing.get_type_hints(TicketServiceProps)
    assert list(hints) == [each.prop for each in FIELDS if each.owner == "TicketService"]
    assert all(type(None) in typing.get_args(hint) for hint in hints.values())


def test_the_configuration_table_is_replaced_whole_and_only_it():
    page = f"# Title\n\n{TABLE_HEADER}\n| --- |\n| `old` | row |\n\nAfter the table.\n"
    assert (
        with_configuration_table(page, f"{TABLE_HEADER}\n| new |")
        == f"# Title\n\n{TABLE_HEADER}\n| new |\n\nAfter the table.\n"
    )
