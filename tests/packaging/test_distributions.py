"""The tickets-server distribution as an index takes it: its wheel and sdist pass `twine check --strict`
(a readme, project URLs, classifiers), the wheel passes check-wheel-contents (pyproject.toml's
[tool.check-wheel-contents] names its top-level packages), and every package in it is typed (py.typed).
The repository's address is one value in both pyprojects and the TypeScript client's package.json."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import tickets
from installed import built_distributions

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PACKAGES = {"tickets", "tickets_deploy", "tickets_cdk", "tickets_local", "tickets_admin"}
pytestmark = [pytest.mark.slow, pytest.mark.installs]


@pytest.fixture(scope="module")
def built() -> dict[str, Path]:
    """`python -m build` of the repository: what a release uploads (built once per process and
    shared with the tests that install the wheel: tests/installed.py)."""
    built = built_distributions()
    assert [built["wheel"].name, built["sdist"].name] == [
        f"tickets_server-{tickets.__version__}-py3-none-any.whl",
        f"tickets_server-{tickets.__version__}.tar.gz",
    ]
    return built


def wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        name = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        return Parser().parsestr(archive.read(name).decode())


def test_twine_check_strict_passes_the_wheel_and_the_sdist(built):
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(built["wheel"]), str(built["sdist"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2, check.stdout


def test_the_metadata_carries_the_readme_urls_and_classifiers(built):
    metadata = wheel_metadata(built["wheel"])
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().startswith("# Tickets")
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL"))
    assert urls == PROJECT["project"]["urls"]
    classifiers = metadata.get_all("Classifier")
    assert "Typing :: Typed" in classifiers
    claimed = {
        line.rsplit(" :: ", 1)[1] for line in classifiers if line.startswith("Programming Language :: Python :: 3.")
    }
    assert min(claimed, key=lambda v: tuple(map(int, v.split(".")))) == metadata["Requires-Python"].removeprefix(">=")


def test_check_wheel_contents_passes_the_wheel(built):
    checked = subprocess.run(
        [sys.executable, "-m", "check_wheel_contents", str(built["wheel"])],
        cwd=REPO,  # it reads [tool.check-wheel-contents] from pyproject.toml here
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip().endswith("OK"), checked.stdout


def test_every_package_in_the_wheel_is_typed(built):
    with zipfile.ZipFile(built["wheel"]) as archive:
        names = set(archive.namelist())
    top_level = {name.split("/")[0] for name in names if "/" in name and ".dist-info" not in name}
    assert top_level == PACKAGES
    assert {f"{package}/py.typed" for package in PACKAGES} <= names


def test_the_sdist_holds_the_readme_and_license(built):
    with tarfile.open(built["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"README.md", "LICENSE", "pyproject.toml", "tickets_cdk/py.typed"} <= names


def test_the_repository_address_is_one_value_everywhere():
    client = tomllib.loads((REPO / "clients" / "python" / "pyproject.toml").read_text())["project"]["urls"]
    package = json.loads((REPO / "clients" / "typescript" / "package.json").read_text())["repository"]
    repository = PROJECT["project"]["urls"]["Repository"]
    assert client["Repository"] == repository
    assert package["url"] == f"git+{repository}.git" and package["directory"] == "clients/typescript"
