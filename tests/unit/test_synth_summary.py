"""tools/synth_summary.py: what `make synth` says of the cloud assembly, and what `make destroy` says it deletes
before the CDK CLI asks (or why the app no longer has that stack), on an assembly of one stack as the CDK writes it."""

from __future__ import annotations

import json

from tools.synth_summary import main


def test_make_destroy_names_the_stack_it_deletes_or_why_the_app_has_none(tmp_path, capsys):
    (tmp_path / "Tickets-us-east-1.template.json").write_text(json.dumps({"Outputs": {"TicketsLedgerVersion": {}}}))
    stack = {
        "type": "aws:cloudformation:stack",
        "environment": "aws://unknown-account/us-east-1",
        "properties": {"templateFile": "Tickets-us-east-1.template.json"},
    }
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": {"Tickets-us-east-1": stack}}))
    assert main([str(tmp_path), "--destroy", "Tickets-us-east-1"]) == 0
    assert capsys.readouterr().out.startswith("make destroy: the stack Tickets-us-east-1 in us-east-1 (")
    assert main([str(tmp_path), "--destroy", "Tickets-eu-west-1"]) == 1
    assert capsys.readouterr().err == (
        "make destroy: the app declares no stack Tickets-eu-west-1 (its stacks: Tickets-us-east-1); the CDK CLI "
        "destroys only the app's stacks. A region removed from cdk.json: put it back on its slot, make destroy, "
        "then remove it\n"
    )
