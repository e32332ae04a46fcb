"""The functional tier's fixtures: the real handler on moto's DynamoDB (moto_deployment.py)."""

import pytest

from local_support import running_dynalite
from moto_deployment import BACKENDS, api, aws, backend, deploy, dynamodb_calls  # noqa: F401  (fixtures: pytest finds them here)


def pytest_generate_tests(metafunc) -> None:
    """A module that says `EVERY_BACKEND = True` runs each of its tests that deploys on every backend (moto and the
    local server's memory backend: moto_deployment.BACKENDS), the same assertions on each; but the tests its
    MOTO_ONLY names, which reach into botocore or moto themselves."""
    every = getattr(metafunc.module, "EVERY_BACKEND", False)
    if (
        every
        and "backend" in metafunc.fixturenames
        and metafunc.function.__name__ not in getattr(metafunc.module, "MOTO_ONLY", ())
    ):
        metafunc.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def tables_directory(tmp_path):
    return tmp_path / "dynalite"


@pytest.fixture
def dynalite_on_disk(tables_directory):
    """A dynalite of the test's own, its tables in tables_directory (local_support.running_dynalite), so that one
    started again there (after a kill took it down) has them."""
    with running_dynalite(tables_directory) as endpoint:
        yield endpoint
