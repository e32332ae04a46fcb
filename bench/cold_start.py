"""Cold start (bench/README.md): a fresh `python -c` per sample imports the handler module, timed inside the child
around the import alone, from a copy of the code asset without bytecode (as Lambda's read-only /var/task). Tickets,
the baseline and Tickets with access rules (50 principals read from an SSM stand-in, bench/ssm_stub.py) alternate
ABBA with the same environment."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .environment import child_env, handler_env
from .package import BASELINE, build_task_root
from .ssm_stub import RULES_PRINCIPALS, ssm_stub

TICKETS_HANDLER = "tickets.handler"
BASELINE_HANDLER = BASELINE.stem
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
    with tempfile.TemporaryDirectory(prefix="tickets-bench-task-") as directory, ssm_stub() as rules_env:
        task_root = build_task_root(Path(directory))
        env = child_env(handler_env(), [task_root])
        children = {  # what each child imports, with which environment
            "tickets": (TICKETS_HANDLER, env),
            "baseline": (BASELINE_HANDLER, env),
            "with_rules": (TICKETS_HANDLER, {**env, **rules_env}),
        }
        for module, child_environment in children.values():  # once each first, so the OS has all in its cache
            time_import(module, child_environment, task_root)
        times: dict[str, list[float]] = {name: [] for name in children}
        for index in range(samples):
            for name in list(children) if index % 2 == 0 else reversed(children):
                times[name].append(time_import(*children[name], task_root))
    ms = {name: 1000 * statistics.median(measured) for name, measured in times.items()}
    return {
        "cold_start_rules_ratio": ms["with_rules"] / ms["tickets"],
        "cold_start_rules_ms": {"with_rules": ms["with_rules"], "principals": RULES_PRINCIPALS},
        "cold_start_ratio": ms["tickets"] / ms["baseline"],
        "cold_start_ms": {"tickets": ms["tickets"], "baseline": ms["baseline"], "samples": samples},
        "cold_start_pair_ratios": [t / b for t, b in zip(times["tickets"], times["baseline"])],
    }
