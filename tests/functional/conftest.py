"""The functional tier's fixtures: the real handler on moto's DynamoDB (moto_deployment.Region)."""

from __future__ import annotations

import pytest
from moto import mock_aws

from common import EXAMPLE_CONFIG
from moto_deployment import Region


@pytest.fixture
def aws():
    """moto's in-memory AWS for the duration of one test."""
    with mock_aws():
        yield


@pytest.fixture
def deploy(aws):
    """deploy(config, region) -> Region, with the app built from that cdk.json-style config."""

    def deploy(config: dict | None = None, region: str = "us-east-1") -> Region:
        return Region(EXAMPLE_CONFIG if config is None else config, region)

    return deploy


@pytest.fixture
def api(deploy) -> Region:
    """The handler deployed with the README's example config in us-east-1."""
    return deploy()


@pytest.fixture
def dynamodb_calls(api):
    """Every (operation, table) the handler's client sends."""
    with api.dynamodb_calls() as calls:
        yield calls
