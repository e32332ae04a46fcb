"""The forge's workflows (.github/workflows): valid against GitHub's workflow schema (check-jsonschema's
vendored copy) and clean under zizmor's audits (its pedantic persona), both offline; every action pinned by
commit to its current major; every job with a timeout. CI runs once per change (pull requests, and pushes to
main), cancels a pull request's superseded runs, caches pip's and npm's downloads keyed on the files that pin
them, and tests every Python the packages claim (3.14, the Lambda runtime, among them) on Node 22. A release
builds every package once (the TypeScript client from its lockfile), checks them as the registries read them,
runs lint and the tests on each Python of that matrix against those built files, restores no cache, and publishes
those same files with trusted publishing (OIDC) and provenance."""

from __future__ import annotations

import json
import re
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
        [tool("zizmor"), "--offline", "--persona", "pedantic", "--format", "json", str(WORKFLOWS)],
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
        text = text.replace(f"actions/setup-node@{PINNED['actions/setup-node'][0]}", "someone/setup-thing@v1")
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


# Each action the workflows use, pinned by the commit of its current major's latest release (as read from the
# actions' own repositories, 2026-11-27): (commit, the release the comment names). pypa/gh-action-pypi-publish
# stays on the last v1 release whose commit could be checked here.
PINNED = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/setup-node": ("820762786026740c76f36085b0efc47a31fe5020", "v7.0.0"),
    "actions/cache": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "pypa/gh-action-pypi-publish": ("76f52bc884231f62b9a034ebfe128415bbaabdfc", "v1.12.4"),
}


def jobs() -> dict[str, dict]:
    """Every job of both workflows, as `file: job`."""
    return {
        f"{name}: {job}": spec for name in ("ci.yml", "release.yml") for job, spec in workflow(name)["jobs"].items()
    }


def uses(steps: list[dict], action: str) -> list[dict]:
    return [step for step in steps if step.get("uses", "").startswith(f"{action}@")]


def test_every_action_is_pinned_by_commit_to_its_current_major():
    for name in ("ci.yml", "release.yml"):
        for line in (WORKFLOWS / name).read_text().splitlines():
            if "uses:" not in line:
                continue
            matched = re.fullmatch(r"\s*(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v[0-9.]+)", line)
            assert matched, f"{name}: {line.strip()} is not pinned by commit with its release named"
            action, commit, release = matched.groups()
            assert (commit, release) == PINNED[action], f"{name}: {action}"


def test_every_job_has_a_timeout():
    for job, spec in jobs().items():
        assert isinstance(spec.get("timeout-minutes"), int) and 0 < spec["timeout-minutes"] <= 30, job


def test_ci_runs_once_per_change_and_cancels_a_pull_requests_superseded_runs():
    ci = workflow("ci.yml")
    # YAML 1.1 reads the key `on` as True. A branch's pushes run in its pull request, not a second time.
    assert ci[True] == {"push": {"branches": ["main"]}, "pull_request": None}
    assert ci["concurrency"] == {
        "group": "ci-${{ github.event.pull_request.number || github.sha }}",
        "cancel-in-progress": "${{ github.event_name == 'pull_request' }}",
    }


def test_ci_caches_pip_and_npm_downloads_keyed_on_what_pins_them():
    for job in ("lint", "test"):
        (python,) = uses(workflow("ci.yml")["jobs"][job]["steps"], "actions/setup-python")
        assert python["with"]["cache"] == "pip"
        assert {"requirements*.txt", "pyproject.toml"} <= set(python["with"]["cache-dependency-path"].split())
    steps = workflow("ci.yml")["jobs"]["test"]["steps"]
    (npm,) = uses(steps, "actions/cache")
    assert npm["with"]["path"] == "~/.npm"
    for pinning in ("Makefile", "package.json", "clients/typescript/package-lock.json"):  # Node's version, the tools
        assert f"'{pinning}'" in npm["with"]["key"]
    (node,) = uses(steps, "actions/setup-node")
    assert node["with"]["package-manager-cache"] is False  # one npm cache, the step above


def test_ci_runs_lint_and_tests_on_every_claimed_python_the_lambda_runtime_among_them():
    from tickets_cdk.resources import RUNTIME

    ci = workflow("ci.yml")
    classifiers = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["classifiers"]
    claimed = [
        line.rsplit(" :: ", 1)[1] for line in classifiers if line.startswith("Programming Language :: Python :: 3.")
    ]
    matrix = ci["jobs"]["test"]["strategy"]["matrix"]["python"]
    assert matrix == claimed == ["3.11", "3.12", "3.13", "3.14"]
    assert RUNTIME.name.removeprefix("python") in matrix  # python3.14: what the construct deploys is tested
    steps = ci["jobs"]["test"]["steps"]
    (node,) = uses(steps, "actions/setup-node")
    assert node["with"]["node-version"] == "22"
    assert [step.get("run") for step in steps if "run" in step] == ["make test"]
    assert [step.get("run") for step in ci["jobs"]["lint"]["steps"] if "run" in step] == ["make lint"]


def test_a_release_builds_once_tests_those_files_on_every_python_then_publishes_them():
    """The build job alone builds (the wheels, the sdists, the npm tarball) and uploads them; each Python of CI's
    matrix downloads them, lints and runs make test on them (TICKETS_RELEASE_DIST: tests/installed.py's released()
    takes them instead of building); the publish jobs wait for every one and publish the same artifacts."""
    from installed import RELEASE_DIST

    release = workflow("release.yml")
    assert release[True] == {"push": {"tags": ["v*"]}}
    assert release["concurrency"]["cancel-in-progress"] is False
    jobs = release["jobs"]
    assert "needs" not in jobs["build"]
    built = "\n".join(step.get("run", "") for step in jobs["build"]["steps"])
    assert "twine check --strict dist/python/*" in built and "check-wheel-contents dist/python/*.whl" in built
    assert "npm ci " in built and "--no-package-lock" not in built  # the client from its committed lockfile
    uploaded = {
        step["with"]["name"]: step["with"]["path"] for step in uses(jobs["build"]["steps"], "actions/upload-artifact")
    }
    assert uploaded == {"python": "dist/python/", "npm": "dist/npm/"}
    for job, spec in jobs.items():  # nothing is built twice
        if job != "build":
            ran = "\n".join(step.get("run", "") for step in spec["steps"])
            assert "-m build" not in ran and "npm pack" not in ran and "npm run build" not in ran, job

    test = jobs["test"]
    assert test["needs"] == "build" and test["strategy"]["fail-fast"] is True
    assert test["strategy"]["matrix"]["python"] == workflow("ci.yml")["jobs"]["test"]["strategy"]["matrix"]["python"]
    (python,) = uses(test["steps"], "actions/setup-python")
    assert python["with"]["python-version"] == "${{ matrix.python }}"
    downloaded = {
        step["with"]["name"]: step["with"]["path"] for step in uses(test["steps"], "actions/download-artifact")
    }
    runs = [step for step in test["steps"] if "run" in step]
    assert [step["run"] for step in runs] == ["make lint", "make test"]
    where = runs[1]["env"][RELEASE_DIST]
    assert downloaded == {"python": f"{where}/python/", "npm": f"{where}/npm/"}

    for job, artifact in (("pypi", "python"), ("npm", "npm")):  # the tested files, and only after every Python
        assert jobs[job]["needs"] == ["build", "test"]
        (download,) = uses(jobs[job]["steps"], "actions/download-artifact")
        assert download["with"]["name"] == artifact
    for job in ("pypi", "npm"):  # OIDC: no stored token anywhere
        assert jobs[job]["permissions"] == {"id-token": "write"}
    assert uses(jobs["pypi"]["steps"], "pypa/gh-action-pypi-publish")
    publish = next(step["run"] for step in jobs["npm"]["steps"] if "publish" in step.get("run", ""))
    assert "--provenance" in publish and "dist/tickets-client-*.tgz" in publish
    text = (WORKFLOWS / "release.yml").read_text()
    assert "secrets." not in text
    # Nothing cached is restored into a release (cache poisoning): it builds from what the tag holds.
    for job, spec in jobs.items():
        assert not uses(spec["steps"], "actions/cache"), job
        for step in uses(spec["steps"], "actions/setup-python"):
            assert "cache" not in step.get("with", {}), job
        for step in uses(spec["steps"], "actions/setup-node"):
            assert step["with"]["package-manager-cache"] is False, job


def test_the_tests_take_the_releases_built_files_when_told(tmp_path, monkeypatch):
    from installed import RELEASE_DIST, released

    monkeypatch.delenv(RELEASE_DIST, raising=False)
    assert released("python/tickets_server-*.whl") is None  # the tests build their own
    (tmp_path / "python").mkdir()
    wheel = tmp_path / "python" / "tickets_server-0.3.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    monkeypatch.setenv(RELEASE_DIST, str(tmp_path))
    assert released("python/tickets_server-*.whl") == wheel
    (tmp_path / "python" / "tickets_server-0.2.0-py3-none-any.whl").write_bytes(b"")
    with pytest.raises(RuntimeError, match="2 files match python/tickets_server-\\*.whl, not one"):
        released("python/tickets_server-*.whl")
