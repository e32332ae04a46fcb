"""The Makefile as a newcomer meets it: bare `make` and `make help` list every target with one line (its `## `
comment); `make destroy` runs the pinned CDK CLI on one region's stack; a .venv made by another Python is made
again; `make clean` removes every build output."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKEFILE = (REPO / "Makefile").read_text()


def make(*args: str) -> subprocess.CompletedProcess[str]:
    """A make of its own, as a user's shell runs it (not a sub-make of `make test`: MAKELEVEL and MAKEFLAGS unset)."""
    env = {name: value for name, value in os.environ.items() if name not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=120, env=env
    )


def test_bare_make_is_make_help_and_lists_every_target_with_one_line():
    listed = make()
    assert listed.returncode == 0 and listed.stdout == make("help").stdout
    lines = dict(
        re.fullmatch(r"make (\S+(?: test-\S+)?) +(\S.*)", line).groups() for line in listed.stdout.splitlines()
    )
    (phony,) = re.findall(r"^\.PHONY: (.*)$", MAKEFILE, re.MULTILINE)
    named = {target for entry in lines for target in entry.split()}
    assert named == set(phony.split())
    assert lines["destroy"] == "delete one region's stack: REGION=... (its tables are retained)"


def test_make_destroy_runs_the_pinned_cli_on_one_regions_stack_and_wants_the_region():
    """make destroy as a dry run (make -n): the pinned CLI (no npx, which runs the machine's Node), on the stack the
    reference app names Tickets-<region>, named first; without REGION it stops before installing anything."""
    planned = subprocess.run(
        ["make", "-n", "destroy", "REGION=eu-west-1"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert planned[-2:] == [
        ".venv/bin/python tools/synth_summary.py cdk.out --destroy Tickets-eu-west-1",
        "node_modules/.bin/cdk destroy --app cdk.out Tickets-eu-west-1",
    ]
    assert not [line for line in planned if "npx" in line]
    adopting = make("-n", "adopt", "REGION=eu-west-1", "MAPPING=mapping.json").stdout.splitlines()
    assert adopting[-1] == "node_modules/.bin/cdk import Tickets-eu-west-1 --resource-mapping mapping.json"
    refused = subprocess.run(["make", "-n", "destroy"], cwd=REPO, capture_output=True, text=True)
    assert refused.returncode != 0 and refused.stdout == ""
    assert "make destroy REGION=<region> deletes the stack Tickets-<region> (its tables are retained)" in refused.stderr


def python_id(python: str) -> str | None:
    """What the Makefile compares (PYTHON_ID): the version and installation, or None if `python` does not run."""
    ran = subprocess.run(
        [python, "-c", "import sys; print(sys.implementation.cache_tag, sys.base_prefix)"],
        capture_output=True,
        text=True,
    )
    return ran.stdout.strip() if ran.returncode == 0 else None


def test_a_venv_made_by_another_python_is_made_again(tmp_path):
    ours = python_id("python3")
    candidates = ["/usr/bin/python3", *(f"python3.{minor}" for minor in range(11, 16))]
    other = next((each for each in candidates if python_id(each) not in (None, ours)), None)
    if other is None:
        pytest.skip("no second Python 3 here")
    venv = tmp_path / "venv"
    common = [f"VENV={venv}", "VENV_ARGS=--without-pip", str(venv / "bin" / "python")]
    made = make(f"PYTHON={other}", *common)
    assert made.returncode == 0, made.stderr
    assert python_id(str(venv / "bin" / "python")) == python_id(other)
    assert make(f"PYTHON={other}", *common).stdout == f"make: '{venv}/bin/python' is up to date.\n"
    remade = make("PYTHON=python3", *common)
    assert remade.returncode == 0, remade.stderr
    assert remade.stdout.startswith(f"{venv} was made by another Python than python3: making it again\n")
    assert python_id(str(venv / "bin" / "python")) == ours


def test_make_clean_removes_every_build_output_and_keeps_the_local_key_files(tmp_path):
    """`make clean` in a tree holding what the targets, the tests and a `python -m build` by hand leave (setuptools'
    build/ would ship a module deleted since in the next wheel built in place); the local server's key files stay."""
    (tmp_path / "Makefile").write_text(MAKEFILE)
    left = [".venv/bin", ".venv-sets/serve", ".venv-examples/bin", ".venv-checkov/bin", ".tools/node"]
    left += ["node_modules/aws-cdk", "cdk.out", "bench/out", ".pytest_cache", ".hypothesis", "build/lib/tickets"]
    left += ["dist", "tickets_server.egg-info", "clients/python/build/lib", "clients/python/dist"]
    left += ["clients/python/tickets_client.egg-info", "clients/typescript/node_modules", "clients/typescript/dist"]
    for path in left:
        (tmp_path / path).mkdir(parents=True)
    key_file = tmp_path / ".tickets-local" / "keys.json"
    key_file.parent.mkdir()
    key_file.write_text("{}")
    env = {name: value for name, value in os.environ.items() if name not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    subprocess.run(["make", "clean"], cwd=tmp_path, check=True, capture_output=True, env=env)
    assert [path for path in left if (tmp_path / path).exists()] == []
    assert key_file.read_text() == "{}"
