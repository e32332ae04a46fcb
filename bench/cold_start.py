"""Cold start: a fresh interpreter imports the handler module, which builds its clients.

Each sample is its own `python -c` process, timed inside the child with perf_counter
around the import alone (interpreter start-up is the same for both and is left out).
The children import from a copy of the code asset without bytecode, as Lambda imports
from /var/task, which is read-only: there every cold start compiles the asset's modules.
Tickets and baseline children alternate (ABBA), with the same environment.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .environment import child_env, handler_env
from .package import BASELINE_ASSET_NAME, build_task_root

TICKETS_HANDLER = "tickets.handler"
BASELINE_HANDLER = Path(BASELINE_ASSET_NAME).stem
_CHILD = """
import importlib, sys, time
started = time.perf_counter()
module = importlib.import_module(sys.argv[1])
elapsed = time.perf_counter() - started
print(repr(elapsed))
"""


def time_import(module: str, env: dict[str, str], cwd: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, module], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing {module} in a fresh process failed:\n{done.stderr.strip()}")
    return float(done.stdout.strip().splitlines()[-1])


def measure(samples: int = 15) -> dict:
    with tempfile.TemporaryDirectory(prefix="tickets-bench-task-") as directory:
        task_root = build_task_root(Path(directory))
        env = child_env(handler_env(), [task_root])
        times: dict[str, list[float]] = {TICKETS_HANDLER: [], BASELINE_HANDLER: []}
        for module in times:  # once each first, so the OS has both in its file cache
            time_import(module, env, task_root)
        for index in range(samples):
            order = (BASELINE_HANDLER, TICKETS_HANDLER) if index % 2 == 0 else (TICKETS_HANDLER, BASELINE_HANDLER)
            for module in order:
                times[module].append(time_import(module, env, task_root))
    tickets, baseline = times[TICKETS_HANDLER], times[BASELINE_HANDLER]
    return {
        "cold_start_ratio": statistics.median(tickets) / statistics.median(baseline),
        "cold_start_ms": {
            "tickets": 1000 * statistics.median(tickets),
            "baseline": 1000 * statistics.median(baseline),
            "samples": samples,
        },
        "cold_start_pair_ratios": [t / b for t, b in zip(tickets, baseline)],
    }
