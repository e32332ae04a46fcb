"""The team's own config: cdk.json's `tickets` object, as a dict (same fields, same validation)."""

import pytest


@pytest.fixture(scope="session")
def tickets_config():
    return {
        "regions": {"eu-west-1": 0},
        "strictKeys": True,
        "counters": {"orders": {"start": 5000}, "invoices": {"start": 1, "stride": 10}},
    }
