"""The Lambda's entry point: the app built once per execution environment, the garbage collector paused meanwhile
and what it built frozen (the collections freed almost nothing and cost 18-60 ms of CPU: bench/README.md)."""

from __future__ import annotations

import gc
import os
from typing import Any


def _build() -> Any:
    from . import settings as env
    from .access import ACCESS_PARAMETERS_ENV
    from .access.store import StoredRules, ssm_client
    from .app import create_app, dynamodb_client
    from .botocore_session import new_session

    session = new_session()  # one for every client: they are made together, from one environment
    rules, keys = os.environ.get(ACCESS_PARAMETERS_ENV), os.environ.get(env.OPAQUE_KEYS_ENV)
    if keys:  # only a function with opaque counters loads tickets.opaque
        from .opaque.secret import parameter_keys
    # Read now (cold start); if a read fails, each request answers 503 and tries again.
    return create_app(
        env.Settings.from_json(os.environ[env.SETTINGS_ENV]),
        dynamodb_client(session),
        os.environ[env.COUNTER_TABLE_ENV],
        os.environ[env.IDEMPOTENCY_TABLE_ENV],
        series_table=os.environ.get(env.SERIES_TABLE_ENV),
        workers_table=os.environ.get(env.WORKERS_TABLE_ENV),
        access=StoredRules(ssm_client(session), rules.split(",")).read_at_cold_start() if rules else None,
        opaque_keys=parameter_keys(keys, ssm_client(session)) if keys else None,
    )


collecting = gc.isenabled()
gc.disable()
try:
    app = _build()
finally:
    gc.freeze()
    if collecting:
        gc.enable()
lambda_handler = app.lambda_handler
