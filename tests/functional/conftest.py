"""The functional tier's fixtures: the real handler on moto's DynamoDB (moto_deployment.py)."""

import pytest

from local_support import running_dynalite
from moto_deployment import api, aws, deploy, dynamodb_calls  # noqa: F401  (fixtures: pytest finds them here)


@pytest.fixture
def tables_directory(tmp_path):
    return tmp_path / "dynalite"


@pytest.fixture
def dynalite_on_disk(tables_directory):
    """A dynalite of the test's own, its tables in tables_directory (local_support.running_dynalite), so that one
    started again there (after a kill took it down) has them."""
    with running_dynalite(tables_directory) as endpoint:
        yield endpoint
