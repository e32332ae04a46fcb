"""The forge's workflows (.github/workflows): valid against GitHub's workflow schema (check-jsonschema's
vendored copy) and clean under zizmor's audits, both offline; CI runs on each push and pull request, on
every Python the packages claim and on Node 22; a release builds every package once and publishes with
trusted publishing (OIDC) and provenance."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is not installed (requirements-dev.txt)"
    return found


def test_the_workflows_are_valid_against_githubs_schema():
    checked = subprocess.run(
        [
            tool("check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            *map(str, sorted(WORKFLOWS.glob("*.yml"))),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok -- validation done" in checked.stdout


def test_zizmor_finds_nothing(tmp_path):
    audited = subprocess.run(
        [tool("zizmor"), "--offline", "--format", "json", str(WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    findings = json.loads(audited.stdout)
    assert findings == [], json.dumps(findings, indent=1)[:4000]
    assert audited.returncode == 0, audited.stderr


@pytest.mark.parametrize("bad", ["unpinned", "template-injection"])
def test_zizmor_would_fail_a_workflow_with_a_known_problem(tmp_path, bad):
    """The check can fail: the CI workflow with an action on a tag, or a tag name expanded into a script."""
    text = (WORKFLOWS / "ci.yml").read_text()
    if bad == "unpinned":
        text = text.replace("actions/setup-node@a0853c24544627f65ddf259abe73b1d18a591444", "someone/setup-thing@v1")
    else:
        text = text.replace("      - run: make test", "      - run: echo ${{ github.head_ref }} && make test")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(text)
    audited = subprocess.run(
        [tool("zizmor"), "--offline", "--format", "json", str(tmp_path / ".github" / "workflows")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert audited.returncode != 0 and json.loads(audited.stdout), audited.stdout[-2000:]


def test_ci_runs_lint_and_tests_on_each_push_and_pull_request_on_every_claimed_python():
    ci = workflow("ci.yml")
    assert set(ci[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as True
    classifiers = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["classifiers"]
    claimed = [
        line.rsplit(" :: ", 1)[1] for line in classifiers if line.startswith("Programming Language :: Python :: 3.")
    ]
    assert ci["jobs"]["test"]["strategy"]["matrix"]["python"] == claimed
    steps = ci["jobs"]["test"]["steps"]
    node = next(step for step in steps if step.get("uses", "").startswith("actions/setup-node@"))
    assert node["with"]["node-version"] == "22"
    assert [step.get("run") for step in steps if "run" in step] == ["make test"]
    assert [step.get("run") for step in ci["jobs"]["lint"]["steps"] if "run" in step] == ["make lint"]


def test_a_release_on_a_version_tag_publishes_with_trusted_publishing_and_provenance():
    release = workflow("release.yml")
    assert release[True] == {"push": {"tags": ["v*"]}}
    jobs = release["jobs"]
    assert jobs["pypi"]["needs"] == jobs["npm"]["needs"] == "build"
    for job in ("pypi", "npm"):  # OIDC: no stored token anywhere
        assert jobs[job]["permissions"] == {"id-token": "write"}
    assert any(step.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for step in jobs["pypi"]["steps"])
    publish = next(step["run"] for step in jobs["npm"]["steps"] if "publish" in step.get("run", ""))
    assert "--provenance" in publish
    assert "secrets." not in (WORKFLOWS / "release.yml").read_text()
