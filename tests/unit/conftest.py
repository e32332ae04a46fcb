"""The unit tier: pure modules on plain data (protocol, routes, sequence, keys, config parsing, the
ledger's rules, hypothesis properties of pure code). No AWS stand-in, no CDK, no subprocess, no server.

`make test-unit` runs this folder alone. In such a run, the test after which moto, boto3, botocore or
aws_cdk is first loaded fails, naming it (the first test, when a module imported one while collected).
A test that needs one of them belongs to another tier (CONTRIBUTING.md, Layout)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

UNIT_TIER = Path(__file__).resolve().parent
NOT_IN_THE_UNIT_TIER = ("moto", "boto3", "botocore", "aws_cdk")


_REPORTED: set[str] = set()  # each import fails one test: the first that saw it


def newly_loaded() -> str:
    loaded = [name for name in NOT_IN_THE_UNIT_TIER if name in sys.modules and name not in _REPORTED]
    _REPORTED.update(loaded)
    return ", ".join(loaded)


def only_the_unit_tier(session: pytest.Session) -> bool:
    """Whether this run collected only unit tests (other tiers import moto and aws_cdk legitimately)."""
    return all(item.path.is_relative_to(UNIT_TIER) for item in session.items)


@pytest.fixture(autouse=True)
def _imports_no_aws_stand_in_nor_cdk(request: pytest.FixtureRequest):
    if not only_the_unit_tier(request.session):
        yield
        return
    if loaded := newly_loaded():
        pytest.fail(f"the unit tier's modules imported {loaded} while they were collected", pytrace=False)
    yield
    if loaded := newly_loaded():
        pytest.fail(f"{request.node.nodeid} imported {loaded}: move it to another tier", pytrace=False)
