"""What the two client packages ship and how they install: the public names at the Python package's
root, its version, license and readme in both packages (`twine check --strict`, `npm pack --dry-run`),
a path dependency on the TypeScript client from a clean copy, and a .gitignore that covers what the
documented commands leave behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

import tickets
import tickets_client
import tickets_client.client
from installed import BUILD_SDIST_AND_WHEEL, released

REPO = Path(__file__).resolve().parents[2]
PYTHON_CLIENT = REPO / "clients" / "python"
TYPESCRIPT_CLIENT = REPO / "clients" / "typescript"
TYPESCRIPT_VERSION = json.loads((TYPESCRIPT_CLIENT / "package.json").read_text())["version"]
NPM = shutil.which("npm")


def test_the_public_names_import_from_the_package_root():
    from tickets_client import Block, TicketLease, TicketsClient, TicketsError
    from tickets_client.client import Block as ClientBlock
    from tickets_client.lease import TicketLease as LeaseClass

    assert (Block, TicketLease) == (ClientBlock, LeaseClass)
    assert issubclass(TicketsError, Exception) and callable(TicketsClient)
    assert set(tickets_client.__all__) == {
        "Block",
        "ClockRollback",
        "LeaseLost",
        "PoolFull",
        "SeriesNumber",
        "Snowflake",
        "TicketLease",
        "TicketsClient",
        "TicketsError",
        "WorkerGrant",
        "WorkerLease",
        "__version__",
    }


def test_the_client_is_released_with_the_server_and_its_metadata_reads_the_version():
    assert tickets_client.__version__ == tickets.__version__
    assert tickets.__version__ == TYPESCRIPT_VERSION  # the TypeScript client is released with them
    source = (TYPESCRIPT_CLIENT / "src" / "client.ts").read_text()
    user_agents = re.findall(r'USER_AGENT = "tickets-client-ts/([^"]+)"', source)
    assert user_agents == [TYPESCRIPT_VERSION]
    assert f"tickets-client/{tickets.__version__}" == tickets_client.client.USER_AGENT
    project = tomllib.loads((PYTHON_CLIENT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tickets_client.version.__version__"}


@pytest.mark.parametrize("client", [PYTHON_CLIENT, TYPESCRIPT_CLIENT], ids=["python", "typescript"])
def test_each_client_carries_the_license_and_a_readme(client):
    assert (client / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
    readme = (client / "README.md").read_text()
    assert readme.startswith("# tickets-client") and "Apache License 2.0" in readme


@pytest.mark.slow
@pytest.mark.installs
def test_the_python_client_builds_and_passes_twine_check_strict(tmp_path):
    """The sdist and wheel as PyPI would take them: a readme (long_description) and the license text. In a
    release's tests, the release's own (installed.released)."""
    wheel = released("python/tickets_client-*.whl")
    if wheel is None:
        build = subprocess.run(
            [*BUILD_SDIST_AND_WHEEL, "--outdir", str(tmp_path), str(PYTHON_CLIENT)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert build.returncode == 0, build.stderr[-2000:]
    built = sorted(tmp_path.iterdir()) if wheel is None else [wheel, released("python/tickets_client-*.tar.gz")]
    assert [path.name for path in built] == [
        f"tickets_client-{tickets.__version__}-py3-none-any.whl",
        f"tickets_client-{tickets.__version__}.tar.gz",
    ]
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2


def npm(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    assert NPM, "npm is not on PATH"
    done = subprocess.run(
        [NPM, *args, "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def built_typescript_client() -> Path:
    """clients/typescript with dist/ built (tsc from its devDependencies, as the Makefile builds it)."""
    npm("run", "build", cwd=TYPESCRIPT_CLIENT)
    return TYPESCRIPT_CLIENT


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """The npm tarball as a release packs it: built first, then `npm pack` (no script runs); in a release's tests,
    the release's own (installed.released)."""
    packed_by_the_release = released("npm/tickets-client-*.tgz")
    if packed_by_the_release is not None:
        return packed_by_the_release
    destination = tmp_path_factory.mktemp("npm-pack")
    output = npm("pack", "--json", "--pack-destination", str(destination), cwd=built_typescript_client()).stdout
    [packed] = json.loads(output)
    return destination / packed["filename"]


def packed_files(tarball: Path) -> dict[str, bytes]:
    with tarfile.open(tarball) as archive:
        return {
            member.name.removeprefix("package/"): archive.extractfile(member).read()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile()
        }


@pytest.mark.slow
@pytest.mark.skipif(NPM is None, reason="npm is not installed")
def test_the_npm_tarball_holds_the_license_readme_and_the_build_and_no_scripts(tarball):
    files = packed_files(tarball)
    assert {"LICENSE", "README.md", "package.json", "dist/src/index.js", "dist/src/index.d.ts"} <= set(files)
    assert {"dist/src/testing.js", "dist/src/testing.d.ts"} <= set(files)
    assert not {path for path in files if path.startswith(("src/", "test/", "dist/test/", "scripts/"))}
    manifest = json.loads(files["package.json"])
    # No lifecycle script a consumer's npm would run or warn about (prepare, install, postinstall...).
    assert set(manifest["scripts"]) == {"build", "test"}, manifest["scripts"]


@pytest.mark.slow
@pytest.mark.skipif(NPM is None, reason="npm is not installed")
def test_publint_finds_nothing_in_the_tarball(tarball):
    linted = subprocess.run(
        [NPM, "exec", "--no", "--", "publint", "run", str(tarball), "--strict"],
        cwd=TYPESCRIPT_CLIENT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "All good!" in linted.stdout, linted.stdout


# What @arethetypeswrong/cli may report, and why: the package is ESM only (its README says so), so a
# CommonJS `require` of it resolves to ESM; Node 22.12 and later load it with require(esm).
ANSWERED_ATTW_PROBLEMS = {"CJSResolvesToESM"}


@pytest.mark.slow
@pytest.mark.skipif(NPM is None, reason="npm is not installed")
def test_arethetypeswrong_resolves_both_entry_points_under_every_module_resolution(tarball):
    checked = subprocess.run(
        [NPM, "exec", "--no", "--", "attw", str(tarball), "--format", "json"],
        cwd=TYPESCRIPT_CLIENT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(checked.stdout)
    resolutions = report["analysis"]["entrypoints"]
    assert set(resolutions) == {".", "./testing"}
    for entry in resolutions.values():  # node10 (typesVersions), node16 (CJS and ESM), bundler
        for kind, resolved in entry["resolutions"].items():
            assert resolved["resolution"]["fileName"].endswith(".d.ts"), (kind, resolved)
    problems = {problem["kind"] for problem in report["analysis"]["problems"]}
    assert problems <= ANSWERED_ATTW_PROBLEMS, report["analysis"]["problems"]
    answered = subprocess.run(
        [NPM, "exec", "--no", "--", "attw", str(tarball), "--ignore-rules", "cjs-resolves-to-esm"],
        cwd=TYPESCRIPT_CLIENT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answered.returncode == 0, answered.stdout + answered.stderr


def tracked_files(directory: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "."],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split()


@pytest.mark.slow
@pytest.mark.skipif(NPM is None, reason="npm is not installed")
def test_a_path_dependency_on_the_typescript_client_installs_from_a_fresh_clone(tmp_path):
    """`npm install /path/to/clients/typescript` from a clone with no node_modules and no dist/, as
    docs/reference/clients.md says: build it first (`npm install && npm run build` in the clone; the package has no
    install script to do it), then install it by path. The clone is the repository's files, copied."""
    clone = tmp_path / "clone"
    for name in tracked_files(TYPESCRIPT_CLIENT):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(TYPESCRIPT_CLIENT / name, clone / name)
    assert not (clone / "node_modules").exists() and not (clone / "dist").exists()
    npm("install", cwd=clone)
    npm("run", "build", cwd=clone)
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "user", "version": "1.0.0", "type": "module"}))
    npm("install", str(clone), cwd=project)
    script = (
        'import { Block, TicketsClient } from "tickets-client";'
        'console.log(typeof TicketsClient, [...new Block(5, 9, 2, 3).tickets()].join(","));'
    )
    node = shutil.which("node")
    assert node
    ran = subprocess.run([node, "--input-type=module", "-e", script], cwd=project, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout.strip()) == (0, "function 5,7,9"), ran.stderr[-2000:]


@pytest.mark.parametrize(
    "left_behind",
    [
        f"clients/typescript/tickets-client-{TYPESCRIPT_VERSION}.tgz",  # npm pack there
        "clients/typescript/node_modules/typescript/package.json",
        "clients/typescript/dist/src/index.js",
        f"clients/python/dist/tickets_client-{tickets.__version__}.tar.gz",  # python -m build clients/python
        "clients/python/build/lib/tickets_client/client.py",
        "clients/python/tickets_client.egg-info/PKG-INFO",
        ".tools/node/node_modules/node/bin/node",  # make's pinned Node
        "package-lock.json",
    ],
)
def test_gitignore_covers_what_the_documented_commands_leave(left_behind):
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", left_behind], cwd=REPO, env=os.environ)
    assert ignored.returncode == 0, f"{left_behind} is not ignored"


def test_the_typescript_clients_lockfile_is_committed_and_is_what_make_and_the_release_install_from():
    """npm ci installs exactly the lockfile (and fails where it and package.json disagree): make test's
    TS_DEPS and the release's build both run it, so the published tarball is built from the tested tree."""
    lock = "clients/typescript/package-lock.json"
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", lock], cwd=REPO, env=os.environ)
    assert ignored.returncode == 1, f"{lock} is ignored"
    assert json.loads((REPO / lock).read_text())["lockfileVersion"] == 3
    assert "cd $(TS_CLIENT) && npm ci " in (REPO / "Makefile").read_text()
    release = (REPO / ".github" / "workflows" / "release.yml").read_text()
    assert "npm ci " in release and "--no-package-lock" not in release
