"""The first hour, on a fresh copy of the repository: `make init` and `make synth` (the commands they run: the
one init, then the pinned CDK CLI's synthesis of the reference app) on the cdk.json the repository ships; then a
counter with its own start, stride and shards is one edit of cdk.json and one synthesis, and the local server
serves it from its start. (Each make target's own requirement set is tested from fresh venvs in tests/packaging.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tickets.epochs import Layout

REPO = Path(__file__).resolve().parents[2]
CDK_CLI = REPO / "node_modules" / ".bin" / "cdk"


def fresh_copy(directory: Path) -> Path:
    """The repository's tracked files, as a clone has them, with this checkout's environments linked in (the
    .venv cdk.json's `app` runs, and the pinned CDK CLI)."""
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    )
    for name in filter(None, tracked):
        source = REPO / name
        if source.is_file():  # a file deleted in the working tree but not yet from the index is skipped
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    for linked in (".venv", "node_modules"):
        (directory / linked).symlink_to(REPO / linked)
    return directory


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=dict(os.environ))


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


@pytest.mark.slow
def test_a_counter_with_its_own_start_stride_and_shards_is_one_edit_after_make_init(tmp_path: Path) -> None:
    clone = fresh_copy(tmp_path / "tickets")
    initialised = run([sys.executable, "-m", "tickets_cdk", "init"], clone)
    assert initialised.returncode == 0, initialised.stderr
    assert (clone / "tickets.lock.json").exists()

    config_path = clone / "cdk.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    counters = config["context"]["tickets"]["counters"]
    counters["parcels"] = {"start": 1000, "stride": 7}
    counters["crates"] = {"start": 10, "stride": 3, "shards": 2}
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")

    synthesised = run([str(CDK_CLI), "synth", "--quiet"], clone)
    assert synthesised.returncode == 0, synthesised.stderr
    assert (clone / "cdk.out" / "Tickets-us-east-1.template.json").exists()
    ledger = json.loads((clone / "tickets.lock.json").read_text(encoding="utf-8"))
    assert ledger["versions"][-1]["change"] == "tickets-counters: counters crates, parcels added"

    server = subprocess.Popen(
        [sys.executable, "-m", "tickets_local", "--port", "0", "--exit-with-stdin"],
        cwd=clone,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = next(line.split()[-1] for line in server.stdout if line.strip().startswith("url:"))
        assert [get(f"{url}/parcels")["ticket"] for _ in range(3)] == [1000, 1007, 1014]
        crates = [get(f"{url}/crates")["ticket"] for _ in range(6)]
        layout = Layout(start=10, stride=3, shards=2, region_slots=1)
        assert len(set(crates)) == 6 and all(layout.owner(ticket) is not None for ticket in crates)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    assert server.stderr is not None and "synthesis would refuse" not in server.stderr.read()
