"""Each measurement in a fresh interpreter (bench/README.md, Environment); `python -m bench.child MODULE KWARGS_JSON`
is the child's side."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import RESULTS
from .environment import REPO, child_env, handler_env


def results_of(args: list[str], env: dict[str, str], cwd: Path = REPO) -> Any:
    """What `python ARGS`, in a fresh interpreter, wrote to the file RESULTS names (RuntimeError with its output)."""
    with tempfile.TemporaryDirectory(prefix="tickets-bench-") as directory:
        results = Path(directory) / "results.json"
        env = {**env, RESULTS: str(results)}
        done = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=240)
        if done.returncode != 0:
            raise RuntimeError(f"python {' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        return json.loads(results.read_text())


def run_in_child(module: str, **kwargs: Any) -> dict:
    """`module.measure(**kwargs)` with the handlers' environment."""
    return results_of(["-m", "bench.child", module, json.dumps(kwargs)], child_env(handler_env()))


if __name__ == "__main__":
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the handlers' log and EMF lines: written, unread
    module, kwargs = sys.argv[1:]
    Path(os.environ[RESULTS]).write_text(json.dumps(importlib.import_module(module).measure(**json.loads(kwargs))))
