"""The test kit as a team that only tests against Tickets installs it: `pip install 'tickets-server[testing]'` into a
new venv (tests/installed.py's user_venv: `python -m venv`, then its own pip; the built wheel, the pinned versions)
holds no aws-cdk-lib, weighs at most TESTKIT_BUDGET_MB with pip itself, and serves tickets; there, importing
tickets_cdk names the extra that brings the CDK. The construct with its `cdk` extra is synthesised from the wheel
in tests/synth/test_cdk_lib.py (examples/cdk-app)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from installed import environment, user_venv

pytestmark = [pytest.mark.slow, pytest.mark.installs]
TESTKIT_BUDGET_MB = 150  # the whole venv, as `du -sm` counts it (it was 594 MB with aws-cdk-lib)
THE_CDK = ("aws_cdk", "constructs", "jsii", "cdk_nag")


@pytest.fixture(scope="module")
def testkit() -> Path:
    python, _ = user_venv("testkit", extras=["testing"])
    return python


def run(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args], cwd=python.parent, env=environment(), capture_output=True, text=True, timeout=300
    )


def test_the_test_kit_has_no_cdk_and_weighs_at_most_the_budget(testkit):
    venv_dir = testkit.parent.parent
    megabytes = int(
        subprocess.run(["du", "-sm", str(venv_dir)], capture_output=True, text=True, check=True).stdout.split()[0]
    )
    assert megabytes <= TESTKIT_BUDGET_MB, f"{venv_dir}: {megabytes} MB"
    probe = f"import importlib.util as u, json; print(json.dumps([m for m in {list(THE_CDK)} if u.find_spec(m)]))"
    found = run(testkit, "-c", probe)
    assert found.returncode == 0 and json.loads(found.stdout) == [], found.stdout + found.stderr
    listed = run(testkit, "-m", "pip", "list", "--format", "json", "--disable-pip-version-check")
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert "tickets-server" in names and "moto" in names and not names & {"aws-cdk-lib", "constructs", "cdk-nag"}


def test_the_test_kit_serves_tickets_from_its_venv(testkit):
    """The kit's server (tickets_local.testing, which the pytest plugin starts) runs the real handler from the
    kit's venv alone: Powertools, botocore and moto, no CDK."""
    script = (
        "import json, urllib.request\n"
        "from tickets_local.testing import LocalTickets\n"
        "with LocalTickets({'regions': {'us-east-1': 0}, 'counters': {'orders': {'start': 5000}}}) as server:\n"
        "    print(urllib.request.urlopen(server.url + '/orders', timeout=60).read().decode())\n"
    )
    served = run(testkit, "-c", script)
    assert served.returncode == 0, served.stderr[-3000:]
    assert json.loads(served.stdout)["ticket"] == 5000


def test_importing_tickets_cdk_without_the_cdk_extra_names_the_extra(testkit):
    imported = run(testkit, "-c", "import tickets_cdk")
    assert imported.returncode == 1
    last = imported.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: tickets_cdk, the CDK construct library, needs aws-cdk-lib"), last
    assert "pip install 'tickets-server[cdk]'" in last
    init = run(testkit, "-m", "tickets_cdk", "init")
    assert init.returncode == 1 and "pip install 'tickets-server[cdk]'" in init.stderr
