"""Cold start: a fresh interpreter imports the handler module, which builds its clients.

Each sample is its own `python -c` process, timed inside the child with perf_counter
around the import alone (interpreter start-up is the same for both and is left out).
The children import from a copy of the code asset without bytecode, as Lambda imports
from /var/task, which is read-only: there every cold start compiles the asset's modules.
Tickets and baseline children alternate (ABBA), with the same environment. A third child, Tickets with
access rules (50 principals, read from an SSM stand-in at import: bench/ssm_stub.py), is measured in the
same rounds: its ratio to Tickets without rules is what reading the rules costs a cold start.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .environment import child_env, handler_env
from .package import BASELINE_ASSET_NAME, build_task_root
from .ssm_stub import RULES_PRINCIPALS, ssm_stub

TICKETS_HANDLER = "tickets.handler"
WITH_RULES = "tickets.handler, with access rules"
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
    with tempfile.TemporaryDirectory(prefix="tickets-bench-task-") as directory, ssm_stub() as rules_env:
        task_root = build_task_root(Path(directory))
        env = child_env(handler_env(), [task_root])
        children = {  # what each child imports, with which environment
            TICKETS_HANDLER: (TICKETS_HANDLER, env),
            BASELINE_HANDLER: (BASELINE_HANDLER, env),
            WITH_RULES: (TICKETS_HANDLER, {**env, **rules_env}),
        }
        times: dict[str, list[float]] = {name: [] for name in children}
        for module, child_environment in children.values():  # once each first, so the OS has all in its cache
            time_import(module, child_environment, task_root)
        for index in range(samples):
            order = list(children) if index % 2 == 0 else list(reversed(children))
            for name in order:
                module, child_environment = children[name]
                times[name].append(time_import(module, child_environment, task_root))
    tickets, baseline, with_rules = times[TICKETS_HANDLER], times[BASELINE_HANDLER], times[WITH_RULES]
    return {
        "cold_start_rules_ratio": statistics.median(with_rules) / statistics.median(tickets),
        "cold_start_rules_ms": {"with_rules": 1000 * statistics.median(with_rules), "principals": RULES_PRINCIPALS},
        "cold_start_ratio": statistics.median(tickets) / statistics.median(baseline),
        "cold_start_ms": {
            "tickets": 1000 * statistics.median(tickets),
            "baseline": 1000 * statistics.median(baseline),
            "samples": samples,
        },
        "cold_start_pair_ratios": [t / b for t, b in zip(tickets, baseline)],
    }
