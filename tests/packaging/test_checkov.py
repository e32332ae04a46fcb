"""checkov, the security gate a user's CI runs, on examples/cdk-app synthesised from the built wheel
(docs/reference/construct.md#encryption-and-security-checks): with `encryption_key` (the Invoices service) no failed
check on the construct's resources; without it (Orders) exactly the customer-managed-key checks, CKV_AWS_119 on each
table and CKV_AWS_158 on the log group. checkov runs from its own environment (.venv-checkov, made by `make test`
from requirements-checkov.txt: it pins boto3 below the project's)."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from installed import synthesised_example

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
KEY_CHECKS = {"CKV_AWS_119", "CKV_AWS_158"}  # a customer-managed KMS key: the `encryption_key` prop answers them


@pytest.mark.slow
@pytest.mark.installs
def test_checkov_finds_only_the_key_checks_and_only_where_no_key_is_given():
    if not CHECKOV.exists():
        pytest.fail(f"checkov is not installed: make {CHECKOV.parent.parent.name}/.installed (make test does)")
    app_dir, synth = synthesised_example()  # examples/cdk-app from the installed wheel (test_cdk_lib.py reads it too)
    assert synth.returncode == 0, synth.stderr[-3000:]
    done = subprocess.run(
        [str(CHECKOV), "-d", str(app_dir / "cdk.out"), "--framework", "cloudformation", "-o", "json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    (result,) = report if isinstance(report, list) else [report]
    failed: dict[str, set[str]] = defaultdict(set)  # "template: logical id" -> failed checks
    for check in result["results"]["failed_checks"]:
        failed[f"{Path(check['file_path']).name}: {check['resource'].split('.', 1)[1]}"].add(check["check_id"])
    ours = {
        resource: checks
        for resource, checks in failed.items()
        if resource.split(": ")[1].startswith(("Orders", "Invoices"))
    }
    assert not any(": Invoices" in resource for resource in ours), ours  # with encryption_key: nothing
    assert set().union(*ours.values()) == KEY_CHECKS, ours
    for resource, checks in ours.items():  # each table without a key, and the log group
        assert checks == ({"CKV_AWS_158"} if "FunctionLogs" in resource else {"CKV_AWS_119"}), (resource, checks)
    tables = {r for r in ours if "Table" in r}
    assert len(tables) == 4 and len(ours) == 6  # Orders' two tables and log group, in each of its two regions
    # checkov reads the suppressions: the four checks that do not apply, on each of the three functions.
    assert result["summary"]["skipped"] == 4 * 3, result["summary"]
