"""Each measurement in a fresh interpreter (bench/README.md, Environment); `python -m bench.child MODULE RESULTS_FILE
KWARGS_JSON` is the child's side."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .environment import LAMBDA_SRC, REPO, child_env, handler_env


def run_in_child(module: str, **kwargs: Any) -> dict:
    """`module.measure(**kwargs)` in a fresh interpreter, with the handlers' environment."""
    with tempfile.TemporaryDirectory(prefix="tickets-bench-") as directory:
        results = Path(directory) / "results.json"
        done = subprocess.run(
            [sys.executable, "-m", "bench.child", module, str(results), json.dumps(kwargs)],
            env=child_env(handler_env(), [LAMBDA_SRC, REPO]),
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=240,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{module} failed in its child process:\n{done.stderr.strip()}")
        return json.loads(results.read_text())


if __name__ == "__main__":
    module, results, kwargs = sys.argv[1:]
    Path(results).write_text(json.dumps(importlib.import_module(module).measure(**json.loads(kwargs))))
