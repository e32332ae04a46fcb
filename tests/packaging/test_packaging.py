"""What the packages declare: the server's pyproject names what its code imports (in ranges that hold
the pins of requirements*.txt), and the Python client installs on its own, into a clean venv, with
botocore as its only dependency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from installed import released
from local_support import write_cdk_json

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "python"


def declared(path: Path) -> dict[str, Requirement]:
    """Every requirement a pyproject declares, extras included, by name."""
    project = tomllib.loads(path.read_text())["project"]
    lines = project.get("dependencies", []) + [
        line for extra in project.get("optional-dependencies", {}).values() for line in extra
    ]
    return {Requirement(line).name: Requirement(line) for line in lines}


def pinned(*files: str) -> dict[str, str]:
    """name -> version for each `name==version` line of the requirement files."""
    pins = {}
    for name in files:
        for line in (REPO / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                requirement = Requirement(line)
                pins[requirement.name] = str(requirement.specifier).removeprefix("==")
    return pins


def test_the_server_declares_what_it_imports_in_ranges_holding_the_pinned_versions():
    ranges = declared(REPO / "pyproject.toml")
    pins = pinned("requirements-serve.txt", "requirements.txt")
    assert set(ranges) | set(declared(CLIENT / "pyproject.toml")) == set(pins)  # the serve set has the client's too
    for name, requirement in ranges.items():
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement}"
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert "tickets_client" not in packages  # the client is clients/python's package


def test_the_client_depends_on_botocore_only():
    """botocore (SigV4, credentials); its connections, proxies and CA bundles are the standard library's."""
    requirements = declared(CLIENT / "pyproject.toml")
    assert list(requirements) == ["botocore"]
    for name, requirement in requirements.items():
        assert requirement.specifier.contains(pinned("requirements-serve.txt")[name])


@pytest.mark.slow
@pytest.mark.installs
def test_the_python_client_installs_into_a_clean_venv_and_works_outside_the_repo(tmp_path):
    """`pip install ./clients/python` into a new venv (botocore from the index or pip's cache), then the
    console command and the module run from a directory outside the repo, against the local server (in a
    release's tests, its wheel: installed.released).
    The venv gets no pip of its own (ensurepip takes half a minute on a busy machine): this pip
    installs into it (`--python`)."""
    from tickets_local.server import LocalServer

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    environ = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(arg) for arg in args], cwd=outside, env=environ, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    pip = (sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check")
    run(*pip, "install", "--quiet", "--no-compile", released("python/tickets_client-*.whl") or CLIENT, timeout=180)

    installed = json.loads(run(*pip, "list", "--format", "json").stdout)
    names = {package["name"].lower() for package in installed}
    assert "tickets-client" in names and "botocore" in names
    assert not names & {"tickets", "boto3", "moto", "aws-lambda-powertools", "aws-cdk-lib"}
    where = run(python, "-c", "import tickets_client; print(tickets_client.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(env_dir)  # the installed copy, not the repo's
    assert run(python, "-c", "import importlib.util as u; print(u.find_spec('tickets'))").stdout.strip() == "None"

    command = run(env_dir / "bin" / "tickets-client", "--help").stdout
    assert command.startswith("usage: tickets-client ") and "  tickets-client next orders " in command
    module = run(python, "-m", "tickets_client", "next", "--help").stdout
    assert module.startswith("usage: python -m tickets_client next ") and "--count" in module

    with LocalServer(config_path=write_cdk_json(tmp_path)) as server:
        issued = run(env_dir / "bin" / "tickets-client", "next", "orders", "--count", "2", "--url", server.url)
        block = run(python, "-m", "tickets_client", "block", "orders", "--count", "10", "--url", server.url)
    assert json.loads(issued.stdout)["tickets"] == [5000, 5001]
    assert json.loads(block.stdout) == {"first": 5002, "last": 5011, "step": 1, "count": 10}
