"""The deployment ledger with git (tests/unit/test_ledger.py has its rules): the way back for a ledger a
commit deleted, and hole 1, two pull requests merged by git's own three-way merge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ledger_examples import MAIN, MERGED, PR_A, PR_B, config, on, one_service
from tickets_deploy.ledger import LedgerError, LedgerFile, read_ledger, read_ledger_file, record, to_text


@pytest.fixture
def main_file() -> LedgerFile:
    return on(MAIN, None, "make init")


def test_the_way_back_for_a_ledger_an_upgrade_deleted_restores_it(tmp_path):
    """The command the refusal names, run in a checkout where a commit deleted the ledger."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    ledger = to_text(one_service(record(config(), None)))
    (tmp_path / "tickets.lock.json").write_text(ledger)
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "deployed")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "rm", "-q", "tickets.lock.json")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "upgrade")
    with pytest.raises(LedgerError) as refused:
        read_ledger(tmp_path / "tickets.lock.json")
    (command,) = [line.strip() for line in str(refused.value).splitlines() if line.startswith("  git show ")]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert (tmp_path / "tickets.lock.json").read_text() == ledger


def _merge(tmp_path: Path, base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """git's own three-way line merge of three texts: (the result, whether it conflicted)."""
    import subprocess

    paths = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        paths.append(tmp_path / name)
        paths[-1].write_text(text)
    merged = subprocess.run(["git", "merge-file", "-p", *map(str, paths)], capture_output=True, text=True)
    return merged.stdout, merged.returncode != 0


def test_hole_1_two_pull_requests_merged_by_git_are_refused_and_the_way_out_refuses_b_after_a(main_file, tmp_path):
    """Hole 1: each pull request synthesises alone; the merge must not pass as if checked in sequence."""
    a, b = on(PR_A, main_file), on(PR_B, main_file)
    merged, conflicted = _merge(tmp_path, to_text(main_file), to_text(a), to_text(b))
    assert conflicted  # both appended a version after the same one
    path = tmp_path / "tickets.lock.json"
    path.write_text(merged)
    with pytest.raises(LedgerError, match=r"git conflict markers.*git checkout --ours -- tickets\.lock\.json"):
        read_ledger_file(path)

    # Resolved by keeping both sides' lines: two children of one parent.
    both = re.sub(r"<<<<<<< .*\n(.*)\n=======\n(.*)\n>>>>>>> .*\n", r"\1,\n\2\n", merged)
    both_versions = json.loads(both)["versions"]
    assert [v["parent"] for v in both_versions] == [None, main_file.version, main_file.version]
    path.write_text(both)
    with pytest.raises(LedgerError) as refused:
        read_ledger_file(path)
    changed = "unconfigured keys served (strictKeys false); deployed strictKeys default"
    assert f"{a.version} (tickets-counters: {changed}) and {b.version}" in str(refused.value)
    assert f"are two children of {main_file.version}" in str(refused.value)
    assert "Re-record one change on top of the other" in str(refused.value)

    # Resolved by taking one side's versions while the services merged line by line: they hash to neither.
    one_side = json.loads(both)
    one_side["versions"] = one_side["versions"][:2]
    path.write_text(json.dumps(one_side))
    with pytest.raises(LedgerError, match=rf"hash to [0-9a-f]{{16}}, not to its last version {a.version}"):
        read_ledger_file(path)

    # The way out: A's ledger restored, the merged cdk.json synthesised on top of it: B after A is refused.
    with pytest.raises(LedgerError, match=r"tickets-counters: counters\.foo: a new counter with start 1000"):
        on(MERGED, a)
