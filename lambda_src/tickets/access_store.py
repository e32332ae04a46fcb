"""The access rules from the SSM parameters the stack writes (tickets_cdk/access_rules.py), read once."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from botocore.config import Config

from .access import Rules
from .errors import Unavailable

RETRY_AFTER_FAILURE_SECONDS = 5.0  # while unreadable, SSM is asked again at most this often
SSM_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=1, read_timeout=2)


class StoredRules:
    """The rules, read on first use and kept; 503 (never allow-all) while unreadable."""

    def __init__(self, ssm: Any, names: Sequence[str], clock: Callable[[], float] = time.monotonic):
        self._ssm, self._names, self._clock = ssm, list(names), clock
        self._rules: Rules | None = None
        self._failed_at: float | None = None
        self._why = ""

    def __call__(self) -> Rules:
        if self._rules is None:
            if self._failed_at is None or self._clock() - self._failed_at >= RETRY_AFTER_FAILURE_SECONDS:
                try:
                    self._rules = self._read()
                    return self._rules
                except Exception as err:
                    self._failed_at, self._why = self._clock(), f"{type(err).__name__}: {err}"[:200]
            raise Unavailable(f"this function cannot read its access rules ({self._why}); nothing was done")
        return self._rules

    def _read(self) -> Rules:
        answer = self._ssm.get_parameters(Names=self._names)
        if answer.get("InvalidParameters"):
            raise LookupError(f"missing parameters: {', '.join(answer['InvalidParameters'])}")
        values = {parameter["Name"]: parameter["Value"] for parameter in answer["Parameters"]}
        entries: list[tuple[str, Any]] = []
        for name in self._names:
            # Entries, not a dict: one principal may be written twice, in one parameter or two (the stack writes
            # a granted role's ARN as a token; resolved, it may equal a principal the rules name), and each
            # entry grants what it says. A dict would keep only the last.
            principals = json.loads(values[name], object_pairs_hook=_Entries)
            if not isinstance(principals, _Entries):
                raise ValueError(f"{name}: not an object of principals")
            entries.extend((principal, dict(operations)) for principal, operations in principals)
        return Rules.from_entries(entries)


class _Entries(list[tuple[str, Any]]):
    """A JSON object's (name, value) pairs, in order, duplicates kept."""


def ssm_client() -> Any:
    from .botocore_session import new_session

    return new_session().create_client("ssm", config=SSM_CONFIG)
