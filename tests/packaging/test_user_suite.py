"""The test kit as a user gets it: the wheel installed with its `testing` extra, and the Python client
(clients/python), into a clean virtual environment (.venv-examples, tests/installed.py), nothing of this
checkout on the path; there, the user-style suite of examples/user-tests runs with pytest, its own
mock_aws beside the plugin's server, no conftest.py for the plugin (the entry point registers it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from installed import INSTALL_TIMEOUT_SECONDS, REPO, environment, installed_python

USER_TESTS = REPO / "examples" / "user-tests"
CLIENT = REPO / "clients" / "python"
pytestmark = [pytest.mark.slow, pytest.mark.installs]


def pinned(name: str) -> str:
    """`name==version` as requirements-dev.txt pins it."""
    lines = (REPO / "requirements-dev.txt").read_text().splitlines()
    return next(line.split("#")[0].strip() for line in lines if line.startswith(f"{name}=="))


@pytest.fixture(scope="module")
def python() -> Path:
    ordering = [pinned("pytest-random-order"), pinned("pytest-xdist")]  # both inert unless asked
    python = installed_python(extras=["testing"], requirements=[pinned("pytest"), *ordering])
    # The client is a distribution of its own: installed (not editable) from this checkout, every time, by
    # this interpreter's pip (the environment has none of its own).
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
        + ["install", "--quiet", "--no-deps", "--force-reinstall", str(CLIENT)],
        check=True,
        capture_output=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    return python


@pytest.fixture(scope="module")
def collected(python: Path) -> int:
    """How many tests the whole folder holds, as pytest collects it from the wheel."""
    listed = run(python, "-m", "pytest", "-q", "--collect-only")
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    return int(listed.stdout.strip().splitlines()[-1].split()[0])  # "17 tests collected in 0.05s"


def run(python: Path, *args: str, cwd: Path = USER_TESTS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False, env=environment()
    )


def test_the_installed_packages_come_from_the_environment_not_the_checkout(python):
    where = run(
        python, "-c", "import tickets_local, tickets_client; print(tickets_local.__file__, tickets_client.__file__)"
    )
    assert where.returncode == 0, where.stderr
    assert all(path.startswith(str(REPO / ".venv-examples")) for path in where.stdout.split()), where.stdout
    plugins = run(python, "-c", "from importlib.metadata import entry_points; print(entry_points(group='pytest11'))")
    assert "tickets_local.pytest_plugin" in plugins.stdout, plugins.stdout


# The whole folder as one session: default/, a module's and a test's own config, and configured/'s
# conftest.py, shuffled across modules and folders, on two workers (each its own servers, each running its share
# of the shuffled order). Every test collected passes (none skipped). Each folder alone, in its written order, in
# one process, runs from this checkout in tests/functional/test_plugin.py. Each seed of TICKETS_USER_SUITE_SEEDS
# (e.g. `1,2,3`) adds a run of the whole folder shuffled in one process: make test runs none (until 2026-11-28 it
# ran seed 1, 12 s).
SEEDS = [int(seed) for seed in os.environ.get("TICKETS_USER_SUITE_SEEDS", "").split(",") if seed.strip()]


@pytest.mark.parametrize(
    "order",
    [
        *(["--random-order-bucket=global", f"--random-order-seed={seed}"] for seed in SEEDS),
        ["--random-order-bucket=global", "--random-order-seed=4", "-n", "2"],
    ],
    ids=[*(f"seed-{seed}" for seed in SEEDS), "seed-4-on-2-workers"],
)
def test_every_config_gets_its_own_server_in_any_order(python, collected, order):
    result = run(python, "-m", "pytest", "-q", *order)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"{collected} passed" in result.stdout, result.stdout[-2000:]
    if "-n" in order:
        assert "bringing up nodes" in result.stdout, result.stdout[-2000:]
