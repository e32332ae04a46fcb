"""The local server's examples in the documents start a server on the shipped cdk.json (the documents'
links and other facts: tests/unit/test_docs.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)  # a fenced code block


def shipped_regions() -> set[str]:
    return set(json.loads((REPO / "cdk.json").read_text())["context"]["tickets"]["regions"])


def local_server_examples() -> list[str]:
    """The local server's examples on the shipped cdk.json: docs/reference/local-server.md's and README's shell
    blocks and its --help epilog (the tutorial's run on the cdk.json it edits)."""
    from tickets_local.__main__ import EPILOG

    documents = (REPO / "docs" / "reference" / "local-server.md", REPO / "README.md")
    fenced = [match.group(0) for path in documents for match in FENCE.finditer(path.read_text(encoding="utf-8"))]
    return [*fenced, EPILOG]


def test_the_local_servers_examples_name_regions_of_the_shipped_cdk_json():
    """Each `--region X` and `REGION=X` an example of the local server gives starts a server on the
    shipped cdk.json (load_deployment refuses a region cdk.json does not configure)."""
    from tickets_local.deployment import load_deployment

    named = {
        region
        for example in local_server_examples()
        for region in re.findall(r"(?:--region[ =]|\bREGION=)([a-z]{2}(?:-[a-z]+)+-\d)", example)
    }
    assert "us-east-1" in named  # the examples do show the option
    for region in named:
        assert region in shipped_regions(), f"an example names {region}, not a region of cdk.json"
        assert load_deployment(REPO / "cdk.json", region).region == region
