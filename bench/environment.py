"""What both handlers run with (bench/README.md, Environment): one environment, one event, one context."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from tickets_deploy.config import parse_config
from tickets_deploy.environment import handler_environment, region_settings

REPO = Path(__file__).resolve().parent.parent
REGION = "us-east-1"
COUNTER_TABLE, IDEMPOTENCY_TABLE = "tickets-bench", "tickets-bench-idempotency"
POWERTOOLS_AS_DEPLOYED = {
    "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon outside Lambda
    "POWERTOOLS_LOG_LEVEL": "INFO",  # the stack sets no level
    "POWERTOOLS_METRICS_DISABLED": "false",
}
# Credentials that moto and the Stubber accept; nothing here ever reaches AWS.
FAKE_AWS = {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION} | {
    name: "bench" for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
}
# Any of these would send the handlers' calls elsewhere than the Stubber or moto.
_UNSET = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE", "AWS_LAMBDA_FUNCTION_NAME")
EVENT = json.loads((REPO / "tests" / "fixtures" / "function_url_event.json").read_text(encoding="utf-8"))


def bench_config() -> dict[str, Any]:
    """cdk.json's `tickets`, serving the keys the bench names whatever the repository's strictKeys says."""
    return {**json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]["tickets"], "strictKeys": False}


def _config_and_region(extra_counters: dict[str, dict] | None) -> tuple[Any, str]:
    raw = bench_config()
    config = parse_config({**raw, "counters": {**raw.get("counters", {}), **(extra_counters or {})}})
    return config, next(iter(config.regions))


def handler_env() -> dict[str, str]:
    """The function environment the stack gives cdk.json's first region, on the bench's tables."""
    config, region = _config_and_region(None)
    function_env = handler_environment(config, region, counter_table=COUNTER_TABLE, idempotency_table=IDEMPOTENCY_TABLE)
    return {**function_env, **POWERTOOLS_AS_DEPLOYED, **FAKE_AWS}


def tickets_app(extra_counters: dict[str, dict] | None = None, opaque_keys: Any = None) -> Any:
    """Tickets as its function runs it (tickets.app.create_app) with handler_env's settings."""
    from tickets.app import create_app, dynamodb_client

    settings = region_settings(*_config_and_region(extra_counters))
    return create_app(settings, dynamodb_client(), COUNTER_TABLE, IDEMPOTENCY_TABLE, opaque_keys=opaque_keys)


def child_env(variables: dict[str, str]) -> dict[str, str]:
    """Ours without _UNSET (so the `tickets` this interpreter imports), plus `variables`, writing no bytecode."""
    env = {name: value for name, value in os.environ.items() if name not in _UNSET}
    return {**env, **variables, "PYTHONDONTWRITEBYTECODE": "1"}


def lambda_context() -> Any:
    from tickets_local.server import LambdaContext

    arn = f"arn:aws:lambda:{REGION}:123456789012:function:tickets-bench"
    return LambdaContext(aws_request_id=str(uuid.uuid4()), invoked_function_arn=arn)
