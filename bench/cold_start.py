"""Cold starts (bench/README.md, `cold_start_ratio`): Tickets, the baseline and Tickets with access rules from an SSM
stand-in, each import timed in a fresh process from the asset without bytecode, ABBA; and the asset's size."""

from __future__ import annotations

import io
import json
import statistics
import tempfile
import zipfile
from pathlib import Path

from tickets_cdk.asset import asset_contents, write_asset

from . import RESULTS
from .bare_server import serving
from .child import results_of
from .environment import child_env, handler_env

BASELINE = Path(__file__).with_name("baseline.py")  # one file; its handler is baseline.lambda_handler

TICKETS_HANDLER = "tickets.handler"
RULES_PRINCIPALS = 50  # the most an organisation-wide deployment is designed for (docs/how-to/access-rules.md)
_CHILD = f"""
import importlib, os, sys, time
started = time.perf_counter()
importlib.import_module(sys.argv[1])
open(os.environ[{RESULTS!r}], "w").write(repr(time.perf_counter() - started))
"""


def package_size() -> dict[str, int]:
    files = asset_contents()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return {"package_bytes": len(buffer.getvalue()), "package_files": len(files)}


def build_task_root(destination: Path) -> Path:
    """Both handlers' code side by side in one directory, without bytecode: what /var/task holds."""
    write_asset(destination)
    (destination / BASELINE.name).write_bytes(BASELINE.read_bytes())
    return destination


def ssm_answer() -> bytes:
    """SSM's GetParameters answer (the function's one call at cold start, tickets/access/store.py): two parameters
    holding the rules of RULES_PRINCIPALS role ARNs between them."""
    rules = [
        (f"arn:aws:iam::111122223333:role/platform/service-{n:02d}", {"issue": [f"svc{n:02d}-*"], "read": ["*"]})
        for n in range(RULES_PRINCIPALS)
    ]
    parameters = [
        {"Name": f"tickets-bench-rules-{index}", "Value": json.dumps(dict(rules[index::2])), "Type": "String"}
        for index in range(2)
    ]
    return json.dumps({"Parameters": parameters, "InvalidParameters": []}).encode()


def measure(samples: int = 15) -> dict:
    with (
        tempfile.TemporaryDirectory(prefix="tickets-bench-task-") as directory,
        serving(ssm_answer(), "application/x-amz-json-1.1") as ssm_url,
    ):
        task_root = build_task_root(Path(directory))
        env = child_env({**handler_env(), "PYTHONPATH": str(task_root)})
        rules_env = {  # botocore honours AWS_ENDPOINT_URL_SSM: SSM's own latency is not in the figure
            "AWS_ENDPOINT_URL_SSM": ssm_url,
            "TICKETS_ACCESS_PARAMETERS": "tickets-bench-rules-0,tickets-bench-rules-1",
            "TICKETS_ACCESS_DIGEST": "bench",
        }
        children = {
            "tickets": (["-c", _CHILD, TICKETS_HANDLER], env),
            "baseline": (["-c", _CHILD, BASELINE.stem], env),
            "with_rules": (["-c", _CHILD, TICKETS_HANDLER], {**env, **rules_env}),
        }
        for child in children.values():  # once each first, so the OS has all in its cache
            results_of(*child, task_root)
        times: dict[str, list[float]] = {name: [] for name in children}
        for index in range(samples):
            for name in list(children) if index % 2 == 0 else reversed(children):
                times[name].append(results_of(*children[name], task_root))
    ms = {name: 1000 * statistics.median(measured) for name, measured in times.items()}
    return {
        "cold_start_rules_ratio": ms["with_rules"] / ms["tickets"],
        "cold_start_rules_ms": {"with_rules": ms["with_rules"], "principals": RULES_PRINCIPALS},
        "cold_start_ratio": ms["tickets"] / ms["baseline"],
        "cold_start_ms": {"tickets": ms["tickets"], "baseline": ms["baseline"], "samples": samples},
    }
