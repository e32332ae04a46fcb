"""cfn-lint as the synth tests run it: each template against CloudFormation's schemas of its own region
(a resource type the region lacks, E3006, is an error), with cfn-lint's rules loaded once per process
instead of once a call (half a second each; the test of every region lints one stack per region)."""

from __future__ import annotations

import functools
import json
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
