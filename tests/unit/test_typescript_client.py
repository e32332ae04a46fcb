"""The TypeScript client (clients/typescript) keeps the Python client's numbers: the same backoff,
Retry-After cap, in_progress window, block limit, lease sizing, and worker leases' and Snowflake's defaults.
Its own tests (node's test runner, `npm test` there) run in `make test` after pytest."""

from __future__ import annotations

import re
from pathlib import Path

from tickets_client import client, lease, workers

TYPESCRIPT_SOURCES = Path(__file__).resolve().parents[2] / "clients" / "typescript" / "src"
# `export const NAME = 1_000;` (a number written out; constants computed from others are left to those)
NUMBER_CONSTANT = re.compile(r"^export const ([A-Z][A-Z0-9_]*) = ([0-9][0-9_.]*);", re.MULTILINE)


def typescript_numbers() -> dict[str, float]:
    return {
        name: float(value.replace("_", ""))
        for path in sorted(TYPESCRIPT_SOURCES.glob("*.ts"))
        for name, value in NUMBER_CONSTANT.findall(path.read_text())
    }


def test_the_typescript_client_uses_the_python_clients_numbers():
    numbers = typescript_numbers()
    assert {"FUNCTION_TIMEOUT_SECONDS", "MAX_BLOCK", "BACKOFF_BASE_SECONDS", "RUNS_PER_BLOCK", "ID_BITS"} <= set(
        numbers
    )
    modules = (client, lease, workers)
    python = {name: next((getattr(m, name) for m in modules if hasattr(m, name)), None) for name in numbers}
    assert python == numbers
