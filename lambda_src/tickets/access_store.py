"""The access rules as the stack stores them: SSM parameters, read once per execution environment.

Rules may name roles whose ARNs CloudFormation knows only at deploy (a grant's role), and 50 principals
do not fit in the function's 4 KB environment beside its settings: the stack writes them to SSM (split
over parameters of at most RULES_PARAMETER_BYTES each) and gives the function the parameters' names and
the rules' digest (a rule change changes the environment, so Lambda starts new execution environments).
A function that cannot read its rules refuses every request (503), never allows everything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from botocore.config import Config

from .access import AccessRuleError, Rules, parse_rules
from .errors import Unavailable

ACCESS_PARAMETERS_ENV = "TICKETS_ACCESS_PARAMETERS"  # comma-separated SSM parameter names; unset: no rules
ACCESS_DIGEST_ENV = "TICKETS_ACCESS_DIGEST"  # read by nobody: it changes the environment when the rules do
RULES_PARAMETER_BYTES = 4096  # an SSM standard-tier parameter's largest value (the stack splits by it)
MAX_RULES_PARAMETERS = 10  # what one GetParameters call reads
RETRY_AFTER_FAILURE_SECONDS = 5.0  # while the rules cannot be read, SSM is asked again at most this often
SSM_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=1, read_timeout=2)


class StoredRules:
    """`rules()`: the rules from these parameters, read on first use and kept; Unavailable (503) while
    they cannot be read."""

    def __init__(self, ssm: Any, names: Sequence[str], clock: Callable[[], float] = time.monotonic):
        self._ssm, self._names, self._clock = ssm, list(names), clock
        self._rules: Rules | None = None
        self._failed_at: float | None = None
        self._why = ""

    def __call__(self) -> Rules:
        if self._rules is not None:
            return self._rules
        if self._failed_at is not None and self._clock() - self._failed_at < RETRY_AFTER_FAILURE_SECONDS:
            raise Unavailable(f"this function cannot read its access rules ({self._why}); nothing was done")
        try:
            self._rules = _read(self._ssm, self._names)
        except Exception as err:  # any failure: refuse, never allow everything
            self._failed_at, self._why = self._clock(), f"{type(err).__name__}: {err}"[:200]
            raise Unavailable(f"this function cannot read its access rules ({self._why}); nothing was done") from None
        return self._rules


def _read(ssm: Any, names: list[str]) -> Rules:
    answer = ssm.get_parameters(Names=names)
    if answer.get("InvalidParameters"):
        raise AccessRuleError(f"missing parameters: {', '.join(answer['InvalidParameters'])}")
    values = {parameter["Name"]: parameter["Value"] for parameter in answer["Parameters"]}
    merged: dict[str, Any] = {}
    for name in names:  # in the stack's order
        merged.update(json.loads(values[name]))
    return parse_rules(merged, "access")


def ssm_client() -> Any:
    import botocore.session

    return botocore.session.get_session().create_client("ssm", config=SSM_CONFIG)
