"""cfn-lint as the synth tests run it: each template against CloudFormation's schemas of its own region
(a resource type the region lacks, E3006, is an error), with cfn-lint's rules loaded once per process
instead of once a call (half a second each; the test of every region lints one stack per region); and
cdk-nag's findings as a synthesis's validation report lists them."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import cfnlint.api
from cfnlint.config import ConfigMixIn
from cfnlint.runner import Runner


@functools.cache
def _rules() -> Any:
    # cfn-lint's own runner loads the rules so, and applies one collection to every template it is given.
    return Runner(ConfigMixIn(regions=["us-east-1"])).rules


def cfn_lint_errors(template: dict[str, Any], region: str) -> list[str]:
    """cfn-lint's errors (its E rules; warnings are left out) for `template` deployed in `region`."""
    matches = cfnlint.api.lint(json.dumps(template), rules=_rules(), regions=[region])
    return [str(match) for match in matches if match.rule.id.startswith("E")]


def nag_findings(assembly: Path) -> list[str]:
    """What the validation plugins (the reference app's cdk-nag 3 AwsSolutions pack) found, as `rule at path`
    lines, from the report every synthesis with a plugin writes into its assembly (validation-report.json). A
    finding also stops synthesis: an assembly that exists and has the report passed."""
    report = json.loads((assembly / "validation-report.json").read_text())
    return [
        f"{violation['ruleName']} at {where.get('constructPath')}"
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for where in violation.get("violatingConstructs", violation.get("violatingResources", []))
    ]
