"""The project's Node: `make` pins one LTS release (NODE_VERSION in the Makefile) and puts it first on
PATH for everything it starts, so the CDK CLI, jsii (under synthesis and these tests), dynalite and the
TypeScript client's build and tests all run on it; nothing silences an end-of-life banner; the
TypeScript client's `engines` names what is tested."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKEFILE = (REPO / "Makefile").read_text()
LTS_MAJORS = {22, 24}  # the Node releases in (active or maintenance) long-term support


def pinned_version() -> str:
    match = re.search(r"^NODE_VERSION := (\d+\.\d+\.\d+)$", MAKEFILE, re.MULTILINE)
    assert match, "the Makefile pins no NODE_VERSION"
    return match.group(1)


def test_the_makefile_pins_an_lts_node_and_puts_it_first_on_path():
    assert int(pinned_version().split(".")[0]) in LTS_MAJORS
    assert "node@$(NODE_VERSION)" in MAKEFILE
    assert re.search(r"^export PATH := \$\(CURDIR\)/\$\(NODE_DIR\)/node_modules/\.bin:\$\(PATH\)$", MAKEFILE, re.M)
    # Every target that starts Node installs the pinned one first.
    for target in ("$(CDK)", "$(TS_DEPS)", "$(TS_BUILD)"):
        assert re.search(rf"^{re.escape(target)}:.*\$\(NODE\)", MAKEFILE, re.MULTILINE), target


def test_no_end_of_life_banner_is_silenced():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in tracked.split():
        path = REPO / name
        if path == Path(__file__) or path.suffix not in {"", ".py", ".ts", ".mjs", ".json", ".md", ".cfg", ".toml"}:
            continue
        if path.is_file():
            assert "JSII_SILENCE_WARNING" not in path.read_text(errors="replace"), name


def test_the_typescript_clients_engines_is_the_pinned_major():
    engines = json.loads((REPO / "clients" / "typescript" / "package.json").read_text())["engines"]
    assert engines == {"node": f">={pinned_version().split('.')[0]}"}


@pytest.mark.skipif("TICKETS_NODE_VERSION" not in os.environ, reason="run by make, which exports the pinned version")
def test_under_make_every_node_the_tests_start_is_the_pinned_one():
    """jsii (aws-cdk-lib) and dynalite (`#!/usr/bin/env node`) take `node` from PATH, as this does."""
    assert os.environ["TICKETS_NODE_VERSION"] == pinned_version()
    node = shutil.which("node")
    assert node and Path(node).is_relative_to(REPO / ".tools" / "node"), node
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert version == f"v{pinned_version()}"
    dynalite = REPO / "node_modules" / ".bin" / "dynalite"
    if dynalite.exists():
        assert dynalite.read_text().startswith("#!/usr/bin/env node")


def test_make_bootstrap_runs_the_pinned_cli_on_the_pinned_node():
    """The tutorial's bootstrap is `make bootstrap`, not `npx cdk bootstrap`, which would run the CDK CLI (and
    the app under it, through jsii) on whatever Node the machine has: a Node 20 printed its end-of-life banner
    twice, once as Python bytes. The target needs the pinned Node and CLI, and names no account: the CDK
    bootstraps each stack's region in the credentials' account."""
    assert re.search(r"^bootstrap: .*\$\(CDK\)", MAKEFILE, re.MULTILINE), "no bootstrap target needing $(CDK)"
    dry_run = subprocess.run(["make", "-n", "bootstrap"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry_run.returncode == 0, dry_run.stderr
    assert dry_run.stdout.splitlines()[-1] == "node_modules/.bin/cdk bootstrap", dry_run.stdout
