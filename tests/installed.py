"""Tickets as a user gets it: the repository's wheel, built and installed (not editable) into a clean virtual
environment, `.venv-examples/` at the repository's root (git-ignored), shared by every test that runs
something as a user would (examples/cdk-app here, the test kit's user suite).

    python = installed_python(extras=["cdk"])           # the wheel and the construct's dependencies, pinned
    python = installed_python(extras=["local"], requirements=["pytest==9.2.0"])
    python = layered_python("cdk-nag-2", ["cdk-nag==2.38.2"])  # .venv-examples, with cdk-nag 2 in front

Two more kinds of environment, each kept in a folder of its own, remade only when what it is made from changes:
- `user_venv(NAME, extras)`: exactly `python -m venv` and `pip install 'tickets-server[EXTRAS]'` (the venv's own
  pip, compiling as pip does), nothing else, for what a user's environment holds and weighs;
- `make_set_python(SET)`: the venv a make target makes for itself, by the Makefile's own rule (a new venv, the
  package linked with --no-deps, then the target's requirement set), in .venv-sets/ (CONTRIBUTING.md, Setting up).

The wheel's dependencies are installed at the versions requirements*.txt pin (as constraints), from pip's
cache when it has them. The environment is kept between runs and brought up to date only when the wheel's
contents or the requested extras and requirements change (a stamp file records what is installed).

Within one test process the checkout does not change, so the sdist and wheel are built once (`built_distributions`,
`built_wheel`), and
examples/cdk-app is synthesised from it once (`synthesised_example`) for the tests that only read what
it wrote: each costs about 10 s of CPU, on 2 cores that `make test` keeps busy.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv-examples"
EXAMPLE = REPO / "examples" / "cdk-app"
STAMP = VENV / ".installed.json"
LAYERS = VENV / "layers"  # environments layered on VENV (layered_python), removed with it
SETS = REPO / ".venv-sets"
# Each make target's set: the stamp its Makefile rule makes in the venv, and the requirement file it installs.
MAKE_SETS = {"serve": (".serve", "requirements-serve.txt"), "cdk": (".cdk", "requirements.txt")}
MAKE_SETS["deploy"] = (".deploy", "requirements-deploy.txt")
CONSTRAINTS = (REPO / "requirements.txt", REPO / "requirements-serve.txt")
# The installer the Makefile bootstraps into .venv (UV_VERSION): these environments are the tests' own, made in
# seconds; user_venv alone installs with pip, as a user would.
UV = Path(sys.executable).parent / "uv"
INSTALL_TIMEOUT_SECONDS = 900
# The tests' `python -m build`: each isolated build environment made by uv instead of pip (a release builds with
# pip, .github/workflows/release.yml): the same setuptools from the same index, the same files, 2.5 s less CPU.
BUILD_SDIST_AND_WHEEL = (sys.executable, "-m", "build", "--installer", "uv")  # the sdist, then the wheel built from it
# `make test` runs the build tiers in two processes at once: the tests marked `installs` (which build the packages
# and make the environments below, in the checkout's build/, egg-info and .venv-* folders) in one, the rest in the
# other, with this variable set: there, making any of them is a mistake that would race the first process.
NO_INSTALLS = "TICKETS_TESTS_NO_INSTALLS"


# A release (.github/workflows/release.yml) tests the very files it publishes: its build job makes them once, and
# each Python of its test matrix downloads them to the directory this variable names (python/ and npm/ in it),
# where the tests take them instead of building their own (released()).
RELEASE_DIST = "TICKETS_RELEASE_DIST"


def released(pattern: str) -> Path | None:
    """The one file under RELEASE_DIST matching `pattern` (e.g. `python/tickets_server-*.whl`); None when the
    variable is not set (the tests build their own). RuntimeError if not exactly one file matches."""
    where = os.environ.get(RELEASE_DIST)
    if not where:
        return None
    found = sorted(Path(where).resolve().glob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"{RELEASE_DIST}={where}: {len(found)} files match {pattern}, not one")
    return found[0]


def _installs_allowed() -> None:
    if os.environ.get(NO_INSTALLS):
        raise RuntimeError(
            f"{NO_INSTALLS} is set: this process runs the tests not marked `installs`; mark the test that builds "
            "or installs the packages `@pytest.mark.installs` (make test runs those in a process of their own)"
        )


@functools.cache
def built_distributions() -> dict[str, Path]:
    """`python -m build` of the repository, once per test process, into a directory removed when the process
    ends: the sdist, then the wheel built from it (what a release uploads: tests/packaging/test_distributions.py
    checks both), the one every environment here installs. Built from the sdist, the wheel holds what a clean tree
    gives (setuptools stages packages in build/ and never empties it: a file removed since an earlier in-tree build
    would ship). In a release's tests, the release's own (released())."""
    _installs_allowed()
    wheel = released("python/tickets_server-*.whl")
    if wheel is not None:
        return {"wheel": wheel, "sdist": released("python/tickets_server-*.tar.gz") or wheel}
    destination = _scratch("tickets-dist-")
    done = subprocess.run(
        [*BUILD_SDIST_AND_WHEEL, "--outdir", str(destination), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m build failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    (wheel,), (sdist,) = destination.glob("*.whl"), destination.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def built_wheel() -> Path:
    """The wheel of built_distributions (built once per test process)."""
    return built_distributions()["wheel"]


def synth_app(python: Path, app_dir: Path, validation: bool = False) -> subprocess.CompletedProcess[str]:
    """`python app.py` as the CDK CLI runs it: in the app's directory, CDK_OUTDIR naming the assembly.
    `validation`: with the CDK's built-in CloudFormation validation, as a user's synthesis has it (the tests
    turn it off elsewhere: tests/conftest.py); its findings are in the assembly's report (validation_findings)."""
    env = {**environment(), "CDK_OUTDIR": str(app_dir / "cdk.out")} | with_cdk_validation(validation)
    return subprocess.run([str(python), "app.py"], cwd=app_dir, env=env, capture_output=True, text=True, timeout=300)


def with_cdk_validation(validation: bool) -> dict[str, str]:
    """The environment a synthesis needs for the CDK's built-in CloudFormation validation (True), or to keep
    the tests' setting (False: off, unless the run was started with CDK_VALIDATION set)."""
    return {"CDK_VALIDATION": "true"} if validation else {}


def validation_findings(assembly: Path) -> list[str]:
    """What a synthesis's validation plugins (cdk-nag 3's packs, and the CDK's built-in CloudFormation
    validation where it is on) found, as `rule[finding] at construct path` lines, from the report every
    synthesis with a plugin writes into its assembly (validation-report.json). A cdk-nag finding also stops
    that synthesis, after the report is written; the built-in validation's are warnings."""
    report = json.loads((assembly / "validation-report.json").read_text())
    return sorted(
        f"{violation['ruleName']} at {where['constructPath']}"
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for where in violation["violatingConstructs"]
    )


@functools.cache
def synthesised_example() -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A copy of examples/cdk-app synthesised from the installed wheel, with the CDK's built-in validation as a
    user's synthesis has it, once per test process: the copy's directory (its cdk.out holds the assembly) and
    the synthesis's outcome. Read it; change nothing in it."""
    app_dir = _scratch("tickets-example-") / "shop"
    shutil.copytree(EXAMPLE, app_dir, ignore=shutil.ignore_patterns("cdk.out", "__pycache__"))
    return app_dir, synth_app(installed_python(extras=["cdk"]), app_dir, validation=True)


def _scratch(prefix: str) -> Path:
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def wheel_digest(wheel: Path) -> str:
    """A hash of the wheel's file names and contents (not its timestamps)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            digest.update(name.encode() + b"\0" + archive.read(name) + b"\0")
    return digest.hexdigest()


def environment() -> dict[str, str]:
    """The environment to run the installed packages in: nothing of the repository's on the path."""
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}


def installed_python(extras: Sequence[str] = (), requirements: Sequence[str] = ()) -> Path:
    """The python of .venv-examples/, with the current wheel (and these extras of it, and these further
    requirement specs) installed; installed only when the wheel's contents changed or the call asks for more
    than is installed (extras and requirements of earlier calls are kept)."""
    _installs_allowed()
    wheel = built_wheel()
    digest = wheel_digest(wheel)
    python = VENV / "bin" / "python"
    stamp = json.loads(STAMP.read_text()) if python.exists() and STAMP.exists() else {}
    if stamp.get("wheel") == digest:  # what earlier calls installed stays: extras accumulate
        if set(extras) <= set(stamp["extras"]) and set(requirements) <= set(stamp["requirements"]):
            return python
        extras = sorted({*extras, *stamp["extras"]})
        requirements = sorted({*requirements, *stamp["requirements"]})
    wanted = {"wheel": digest, "extras": sorted(extras), "requirements": sorted(requirements)}
    if not python.exists():
        shutil.rmtree(VENV, ignore_errors=True)
        # No pip of its own (ensurepip is slow on a busy machine): uv installs into it (--python).
        venv.create(VENV, with_pip=False)
    STAMP.unlink(missing_ok=True)
    install = [str(UV), "pip", "install", "--quiet", "--python", str(python)]
    constraints = [argument for path in CONSTRAINTS for argument in ("--constraint", str(path))]
    target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    # The wheel itself again even when its version is unchanged; its dependencies only if missing.
    subprocess.run(
        [*install, "--reinstall-package", "tickets-server", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    done = subprocess.run(
        [*install, *constraints, target, *requirements],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        raise RuntimeError(f"installing {target} into {VENV} failed:\n{done.stderr[-3000:]}")
    STAMP.write_text(json.dumps(wanted))
    return python


def layered_python(name: str, requirements: Sequence[str], extras: Sequence[str] = ()) -> Path:
    """The python of an environment layered on .venv-examples/ (the current wheel and its dependencies, as
    installed_python installs them), at `.venv-examples/layers/<name>/`, where these requirement specs are
    installed without their dependencies and found first: for a package a user may have at any of several
    versions (cdk-nag 2 or 3) beside the same install, without installing the CDK once per version. Their
    dependencies must be in .venv-examples (the wheel with these `extras`): `pip check` refuses the layer
    otherwise. Made again only when the requirements change (the wheel it sees is always .venv-examples' current
    one)."""
    _installs_allowed()
    base = installed_python(extras)
    layer = LAYERS / name
    python, stamp = layer / "bin" / "python", layer / ".installed.json"
    wanted = {"requirements": sorted(requirements)}
    if python.exists() and stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return python
    shutil.rmtree(layer, ignore_errors=True)
    venv.create(layer, with_pip=False)

    def site_packages(interpreter: Path) -> Path:
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        return Path(
            subprocess.run([str(interpreter), "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        )

    # A .pth line that imports runs at start-up: the base's packages (and their own .pth files) come after
    # the layer's own.
    (site_packages(python) / "_tickets_examples.pth").write_text(
        f"import site; site.addsitedir({str(site_packages(base))!r})\n"
    )
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    layer_install = [str(UV), "pip", "install", "--quiet", "--python", str(python), "--no-deps", *requirements]
    for command in (layer_install, [*pip, "check"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS)
        if done.returncode != 0:
            raise RuntimeError(f"{command[:3]} in {layer} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    stamp.write_text(json.dumps(wanted))
    return python


def user_venv(name: str, extras: Sequence[str]) -> tuple[Path, dict[str, Any]]:
    """.venv-sets/NAME, a venv made exactly as a user makes one: `python -m venv` (with the pip it brings), then
    that pip's `pip install 'WHEEL[EXTRAS]'` (the dependencies at the pinned versions, as constraints; compiled,
    as pip does by default), and nothing else. Remade when the wheel's contents or the extras change. Returns
    its python and what made it (the wheel's digest, the extras, the install's seconds)."""
    _installs_allowed()
    wheel = built_wheel()
    wanted = {"wheel": wheel_digest(wheel), "extras": sorted(extras)}
    venv_dir, stamp = SETS / name, SETS / f"{name}.json"
    python = venv_dir / "bin" / "python"
    if python.exists() and stamp.exists():
        made = json.loads(stamp.read_text())
        if {key: made.get(key) for key in wanted} == wanted:
            return python, made
    shutil.rmtree(venv_dir, ignore_errors=True)
    stamp.unlink(missing_ok=True)
    SETS.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True, timeout=INSTALL_TIMEOUT_SECONDS)
    constraints = [argument for path in CONSTRAINTS for argument in ("--constraint", str(path))]
    started = time.monotonic()
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *constraints]
        + [f"{wheel}[{','.join(extras)}]" if extras else str(wheel)],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        raise RuntimeError(f"installing {wheel.name}{sorted(extras)} into {venv_dir} failed:\n{done.stderr[-3000:]}")
    made = {**wanted, "seconds": round(time.monotonic() - started, 1)}
    stamp.write_text(json.dumps(made))
    return python, made


def requirement_files(name: str) -> list[Path]:
    """The requirement file `name` (at the repository's root) and every file it reads (`-r`, `-c` lines)."""
    found: list[Path] = []
    pending = [REPO / name]
    while pending:
        path = pending.pop()
        if path not in found:
            found.append(path)
            for line in path.read_text().splitlines():
                words = line.split("#")[0].split()
                if len(words) == 2 and words[0] in ("-r", "-c", "--requirement", "--constraint"):
                    pending.append(path.parent / words[1])
    return found


def make_set_python(name: str) -> Path:
    """The python of .venv-sets/NAME, made as `make` makes .venv for a target whose set is NAME (MAKE_SETS): by
    the Makefile's own rules, run with VENV pointing there (a new venv, the package linked with --no-deps, the
    set; without pip, the installs by this venv's uv). Remade from nothing when a requirement file the set reads,
    a pyproject.toml or the Makefile changes: an install only adds, and a line removed from a set must be missing
    here. RuntimeError when make fails or the installer prints an ERROR line (a set that leaves a dependency of
    what it installs out)."""
    _installs_allowed()
    stamp_name, requirements = MAKE_SETS[name]
    inputs = [*requirement_files(requirements), REPO / "pyproject.toml", REPO / "clients/python/pyproject.toml"]
    digest = hashlib.sha256()
    for path in [*inputs, REPO / "Makefile"]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    venv_dir, stamp = SETS / name, SETS / f"{name}.json"
    python = venv_dir / "bin" / "python"
    if python.exists() and stamp.exists() and json.loads(stamp.read_text()).get("inputs") == digest.hexdigest():
        return python
    shutil.rmtree(venv_dir, ignore_errors=True)
    stamp.unlink(missing_ok=True)
    SETS.mkdir(exist_ok=True)
    # A make of its own, not a sub-make of `make test`'s (its jobs and output sync are not this one's). Its venv
    # has no pip, and the installs are this venv's uv (the Makefile's UV_VERSION): pip is there only to install uv,
    # 7 s of CPU a venv, which `make test` spends making .venv itself.
    env = {key: value for key, value in environment().items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    made = subprocess.run(
        ["make", "--no-print-directory", f"VENV={venv_dir}", "VENV_ARGS=--without-pip", f"UV={UV}"]
        + [str(venv_dir / stamp_name)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    said = made.stdout + made.stderr
    errors = [line for line in said.splitlines() if line.startswith("ERROR")]
    if made.returncode != 0 or errors:
        raise RuntimeError(f"making the {name} set's venv ({requirements}) failed or pip said ERROR:\n{said[-3000:]}")
    stamp.write_text(json.dumps({"inputs": digest.hexdigest()}))
    return python
