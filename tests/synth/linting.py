"""cfn-lint as the synth tests run it: each template against CloudFormation's schemas of its own region
(a resource type the region lacks, E3006, is an error), with cfn-lint's rules loaded once per process
instead of once a call (half a second each; the test of every region lints one stack per region)."""

from __future__ import annotations

import functools
import json
from typing import Any

from cfnlint.config import ConfigMixIn
from cfnlint.decode.decode import decode_str
from cfnlint.runner import Runner, run_template_by_data


@functools.cache
def _rules() -> Any:
    # cfn-lint's own runner loads the rules so, and applies one collection to every template it is given.
    return Runner(ConfigMixIn(regions=["us-east-1"])).rules


def cfn_lint_errors(template: dict[str, Any], region: str) -> list[str]:
    """cfn-lint's errors (its E rules; warnings are left out) for `template` deployed in `region`. cfn-lint's own
    run of a decoded template with the loaded rules: its `api.lint` would load them again on every call (it reuses
    only a RulesCollection, which the runner's rules are not)."""
    decoded, errors = decode_str(json.dumps(template))
    matches = errors or run_template_by_data(decoded, ConfigMixIn(regions=[region]), _rules())
    return [str(match) for match in matches if match.rule.id.startswith("E")]
