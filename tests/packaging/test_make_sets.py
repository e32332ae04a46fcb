"""Each make target with its own requirement set and nothing else (CONTRIBUTING.md, Setting up), as on a fresh
clone: a venv made by the Makefile's own rule for that set (tests/installed.py's make_set_python: a new venv,
the package linked with --no-deps, the set; pip printing no ERROR line), in which what the target runs runs:

- the CDK set (`make init`, `make synth`): `python -m tickets_cdk init` on a copy of the reference app without
  a ledger, as a fresh clone has, then `cdk synth --quiet` with the pinned CLI (the CDK's built-in CloudFormation
  validation on, as for a user: it and cdk-nag find nothing) and the summary make synth prints
  (tools/synth_summary.py), with no botocore, Powertools or moto in the venv;
- the deploy set (what `make deploy` adds to the CDK set): `python -m tickets_deploy predeploy` reads that
  assembly and ledger and goes as far as AWS: with no credentials here, it stops before its first call, saying so;
- the serve set (`make serve`): the local server, from the repository's cdk.json, answers a ticket.

`make test` (the dev set, which holds every set) cannot see a set that is short: these can. The venvs are
kept in .venv-sets/ and remade when a requirement file, a pyproject.toml or the Makefile changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from installed import REPO, environment, make_set_python, validation_findings, with_cdk_validation
from tickets_deploy.config import load_config_file
from tickets_deploy.ledger import init_ledger, read_ledger_file
from tickets_local.testing import LocalTickets

pytestmark = [pytest.mark.slow, pytest.mark.installs]
CDK_CLI = REPO / "node_modules" / ".bin" / "cdk"
NOT_IN_THE_CDK_SET = ("botocore", "boto3", "aws_lambda_powertools", "moto")


def run(python_or_tool: Path, *args: str | Path, cwd: Path, env: dict[str, str] | None = None):
    return subprocess.run(
        [str(python_or_tool), *map(str, args)],
        cwd=cwd,
        env=env or environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def importable(python: Path, *modules: str) -> dict[str, bool]:
    probe = f"import importlib.util as u, json; print(json.dumps({{m: bool(u.find_spec(m)) for m in {list(modules)}}}))"
    done = run(python, "-c", probe, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """A copy of the reference app (app.py, stacks/, cdk.json; no ledger) whose .venv (cdk.json's `app` runs
    `.venv/bin/python app.py`) is the CDK set's, after `make init`'s and `make synth`'s commands ran in it."""
    python = make_set_python("cdk")
    app_dir = tmp_path_factory.mktemp("fresh-clone")
    shutil.copy(REPO / "app.py", app_dir)
    shutil.copy(REPO / "cdk.json", app_dir)
    shutil.copytree(REPO / "stacks", app_dir / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    (app_dir / ".venv").symlink_to(python.parent.parent)
    init = run(python, "-m", "tickets_cdk", "init", cwd=app_dir)
    env = environment() | with_cdk_validation(True)  # as a user's `make synth` runs
    synth = run(CDK_CLI, "synth", "--quiet", cwd=app_dir, env=env) if init.returncode == 0 else init
    return app_dir, init, synth


def test_make_init_and_make_synth_run_with_the_cdk_set_alone(synthesised):
    app_dir, init, synth = synthesised
    python = app_dir / ".venv" / "bin" / "python"
    assert importable(python, "aws_cdk", "cdk_nag", *NOT_IN_THE_CDK_SET) == {
        "aws_cdk": True,
        "cdk_nag": True,
        **dict.fromkeys(NOT_IN_THE_CDK_SET, False),
    }
    assert init.returncode == 0, init.stdout + init.stderr
    assert "tickets-counters: regionSlots 1, regions us-east-1 (slot 0)" in init.stdout
    # What init wrote is cdk.json's config recorded directly: the app declared exactly it.
    direct = app_dir.parent / "direct.lock.json"
    init_ledger(direct, load_config_file(app_dir / "cdk.json"))
    ledger = read_ledger_file(app_dir / "tickets.lock.json")
    assert ledger.services == read_ledger_file(direct).services
    assert ledger.versions[0].change == "python -m tickets_cdk init"

    assert synth.returncode == 0, synth.stdout + synth.stderr
    assert validation_findings(app_dir / "cdk.out") == []  # cdk-nag's and the CDK's own CloudFormation validation
    summary = run(python, REPO / "tools" / "synth_summary.py", "cdk.out", cwd=app_dir)
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert lines[0] == f"cdk.out: 1 stack(s), ledger version {read_ledger_file(app_dir / 'tickets.lock.json').version}"
    assert lines[1] == "  Tickets-us-east-1 (us-east-1): cdk.out/Tickets-us-east-1.template.json"
    assert lines[2].startswith("    outputs: ") and {"FunctionUrl", "TicketsLedgerVersion"} <= set(
        lines[2].removeprefix("    outputs: ").split(", ")
    )
    # The operator's commands a refusal names need botocore, which this set lacks: a message naming the set-up.
    admin = run(python, "-m", "tickets_admin", "--help", cwd=app_dir)
    assert admin.returncode == 1 and "Traceback" not in admin.stderr
    assert "`make .venv/.deploy` installs it" in admin.stderr


def test_make_deploys_check_runs_with_the_deploy_set_alone(synthesised, tmp_path):
    """The deploy set (requirements-deploy.txt) without the CDK set: predeploy imports only plain modules and
    botocore. No credentials anywhere (no environment keys, no files, no instance metadata): it reads the
    assembly and the ledger, then stops where AWS is asked, saying how to give credentials and what it reads."""
    app_dir, _, synth = synthesised
    assert synth.returncode == 0, synth.stderr
    python = make_set_python("deploy")
    assert importable(python, "botocore", "aws_cdk", "moto") == {"botocore": True, "aws_cdk": False, "moto": False}
    nowhere = str(tmp_path / "none")
    env = {key: value for key, value in environment().items() if not key.startswith("AWS_")}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere, "AWS_EC2_METADATA_DISABLED": "true"}
    checked = run(python, "-m", "tickets_deploy", "predeploy", "--assembly", "cdk.out", cwd=app_dir, env=env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stderr.startswith("predeploy: nothing was deployed: no AWS credentials found: set AWS_PROFILE")
    assert "reads cloudformation:DescribeStacks" in checked.stderr and "Traceback" not in checked.stderr


def test_make_serve_runs_with_the_serve_set_alone():
    python = make_set_python("serve")
    assert importable(python, "moto", "aws_lambda_powertools", "aws_cdk") == {
        "moto": True,
        "aws_lambda_powertools": True,
        "aws_cdk": False,
    }
    config = load_config_file(REPO / "cdk.json")
    key, counter = next(iter(config.counters.items()))
    with LocalTickets(python=str(python), config_file=REPO / "cdk.json") as server:
        issued = json.loads(urllib.request.urlopen(f"{server.url}/{key}", timeout=60).read())
    assert issued["ticket"] == counter.start
