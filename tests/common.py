"""Values the tests of every tier share. Plain data: no AWS imports (the unit tier uses it)."""

from __future__ import annotations

import os
import re
from typing import Any

EXAMPLE_CONFIG = {  # the README's example (Configuration)
    "defaultKey": "default",
    "auth": "AWS_IAM",
    "regions": {"us-east-1": 0},
    "regionSlots": 1,
    "strictKeys": False,
    "counters": {"orders": {"start": 5000}, "invoices": {"start": 1, "stride": 10}},
}
PLUGIN_ENTRY_POINT = "tickets"  # pyproject.toml: [project.entry-points.pytest11]
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

# A sentence of a message that starts in lower case: ". " and a plain word ("says 301. every lane's ...").
# Quoted values ('x', "x", `x`) are left out first (they echo what was written), and so are abbreviations and
# an ellipsis; identifiers (cdk.json, tickets_admin) are not plain words.
_QUOTED = re.compile(r"(?<![A-Za-z])'[^']*'(?![A-Za-z])|\"[^\"]*\"|`[^`]*`")
_LOWER_START = re.compile(r"(?<!\.)(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)\. ([a-z][a-z']*)(?=[\s,;:)]|$)")


def lowercase_sentence_starts(message: str) -> list[str]:
    """Each place in `message` where a sentence starts with a lower-case word, with what precedes it."""
    text = _QUOTED.sub("'…'", message)
    return [text[max(0, found.start() - 30) : found.end()] for found in _LOWER_START.finditer(text)]


def model_settings(examples: int, steps: int) -> Any:
    """A stateful model's hypothesis settings (tests/models): `examples` histories of up to `steps` steps, no
    deadline. Shrinking a history takes minutes: a failure prints its whole history unless TICKETS_MODEL_SHRINK=1
    asks for the shortest."""
    from hypothesis import HealthCheck, Phase, settings

    shrink = os.environ.get("TICKETS_MODEL_SHRINK") == "1"
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        phases=list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
