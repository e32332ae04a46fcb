"""What the access tests of every tier share (tests/functional/test_access.py, tests/synth/test_access_stack.py):
callers as the Function URL's IAM authorizer describes them, and a stand-in for SSM's GetParameters."""

from __future__ import annotations

ACCOUNT = "111122223333"


def role_session(name: str, account: str = ACCOUNT, session: str = "backend", org: str | None = None) -> dict:
    """What the URL's IAM authorizer says of a role session: the assumed-role ARN has no role path."""
    return {
        "accessKey": "ASIAEXAMPLE",
        "accountId": account,
        "callerId": f"AROAEXAMPLE{name.upper()[:6]}:{session}",
        "cognitoIdentity": None,
        "principalOrgId": org,
        "userArn": f"arn:aws:sts::{account}:assumed-role/{name}/{session}",
        "userId": f"AROAEXAMPLE{name.upper()[:6]}:{session}",
    }


def user(arn: str, account: str = ACCOUNT) -> dict:
    return {
        "accessKey": "AKIAEXAMPLE",
        "accountId": account,
        "callerId": "AIDAEXAMPLE",
        "cognitoIdentity": None,
        "principalOrgId": None,
        "userArn": arn,
        "userId": "AIDAEXAMPLE",
    }


class FakeSsm:
    def __init__(self, values: dict[str, str], failures: int = 0):
        self.values, self.failures, self.calls = values, failures, 0

    def get_parameters(self, Names: list[str]) -> dict:  # noqa: N803 - botocore's keyword
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise ConnectionError("ssm unreachable")
        return {
            "Parameters": [{"Name": name, "Value": self.values[name]} for name in Names if name in self.values],
            "InvalidParameters": [name for name in Names if name not in self.values],
        }
