"""A stand-in for SSM's GetParameters over loopback HTTP, for the cold start with access rules: the function reads
its rules at cold start with one GetParameters call (tickets/access/store.py), which goes here (botocore honours
AWS_ENDPOINT_URL_SSM) and is answered the rules of RULES_PRINCIPALS principals. SSM's own latency in a region (a
few ms) is not in what it measures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from .bare_server import serving

# The most an organisation-wide deployment is designed for (docs/how-to/call-from-another-account.md).
RULES_PRINCIPALS = 50
PARAMETER_NAMES = ("tickets-bench-rules-0", "tickets-bench-rules-1")


def rules_values() -> dict[str, str]:
    """Two parameters holding the rules of RULES_PRINCIPALS role ARNs between them."""
    rules = [
        (f"arn:aws:iam::111122223333:role/platform/service-{n:02d}", {"issue": [f"svc{n:02d}-*"], "read": ["*"]})
        for n in range(RULES_PRINCIPALS)
    ]
    half = len(rules) // 2
    return {name: json.dumps(dict(part)) for name, part in zip(PARAMETER_NAMES, (rules[:half], rules[half:]))}


@contextmanager
def ssm_stub() -> Iterator[dict[str, str]]:
    """The variables that point a child's function at the stub, with the rules' parameters, while open."""
    parameters = [{"Name": name, "Value": value, "Type": "String"} for name, value in rules_values().items()]
    answer = json.dumps({"Parameters": parameters, "InvalidParameters": []}).encode()
    with serving(answer, "application/x-amz-json-1.1") as url:
        yield {
            "AWS_ENDPOINT_URL_SSM": url,
            "TICKETS_ACCESS_PARAMETERS": ",".join(PARAMETER_NAMES),
            "TICKETS_ACCESS_DIGEST": "bench",
        }
