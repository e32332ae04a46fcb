"""The handler's tests, run again on the Lambda asset as the construct builds it (tickets_cdk.asset: the package
without comments, docstrings and signatures' annotations), in a pytest of their own with the asset first on
PYTHONPATH: the function Lambda runs is the one these tests pass on, not only its source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from common import ASSET_UNDER_TEST
from tickets_cdk.asset import write_asset

REPO = Path(__file__).resolve().parents[2]
# The handler on moto end to end (routes, answers, errors, faults, deadlines, idempotency, access rules, the
# audit line): the files whose tests exercise every module of the asset. Each costs its time twice in make test.
HANDLER_TESTS = [
    "tests/functional/test_handler.py",
    "tests/functional/test_dispatch.py",
    "tests/functional/test_error_messages.py",
    "tests/functional/test_faults.py",
    "tests/functional/test_deadline.py",
    "tests/functional/test_idempotency.py",
    "tests/functional/test_access.py",
    "tests/functional/test_log_format.py",
]


def test_the_handlers_tests_pass_on_the_stripped_asset(tmp_path):
    asset = write_asset(tmp_path / "asset")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(asset), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "PYTHONDONTWRITEBYTECODE": "1",  # the asset as Lambda reads it: no bytecode beside it
        ASSET_UNDER_TEST: str(asset),  # tests/conftest.py: the run stops unless it imports this asset's tickets
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *HANDLER_TESTS],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert f"tickets: the Lambda asset at {asset}, stripped" in result.stdout
    passed = re.fullmatch(r"=+ (\d+) passed in [\d.]+s(?: \(.*\))? =+", summary)
    assert passed and int(passed.group(1)) > 0, summary  # every test collected passed: none skipped nor failed
