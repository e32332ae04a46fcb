"""The Lambda's entry point: the app built once per execution environment, from its environment.

The garbage collector is paused while the app is built, and what it built (some 85,000 long-lived objects) frozen
after: the collections a cold start ran freed almost nothing and cost 18 ms of CPU, 60 ms with access rules
(bench/README.md).
"""

from __future__ import annotations

import gc
import os
from typing import Any


def _access_rules(session: Any) -> Any:
    """The stored rules (access.store.StoredRules), read now (cold start); None without."""
    from .access import ACCESS_PARAMETERS_ENV
    from .access.store import StoredRules, ssm_client

    names = os.environ.get(ACCESS_PARAMETERS_ENV)
    if not names:
        return None
    # If it fails, each request answers 503 and tries again (access/store.py).
    return StoredRules(ssm_client(session), names.split(",")).read_at_cold_start()


def _opaque_keys(session: Any) -> Any:
    """The keys of opaque ids (opaque.secret.StoredKeys), read now (cold start) from the SSM parameter the environment
    names; None without. Only a function with opaque counters loads tickets.opaque."""
    from .settings import OPAQUE_KEYS_ENV

    name = os.environ.get(OPAQUE_KEYS_ENV)
    if not name:
        return None
    from .access.store import ssm_client
    from .opaque.secret import parameter_keys

    return parameter_keys(name, ssm_client(session))  # if it fails, each request answers 503 and tries again


def _build() -> Any:
    from .app import create_app, dynamodb_client
    from .botocore_session import new_session
    from .settings import (
        COUNTER_TABLE_ENV,
        IDEMPOTENCY_TABLE_ENV,
        SERIES_TABLE_ENV,
        SETTINGS_ENV,
        WORKERS_TABLE_ENV,
        Settings,
    )

    session = new_session()  # one for both clients: they are made together, from one environment
    return create_app(
        Settings.from_json(os.environ[SETTINGS_ENV]),
        dynamodb_client(session),
        os.environ[COUNTER_TABLE_ENV],
        os.environ[IDEMPOTENCY_TABLE_ENV],
        series_table=os.environ.get(SERIES_TABLE_ENV),
        workers_table=os.environ.get(WORKERS_TABLE_ENV),
        access=_access_rules(session),
        opaque_keys=_opaque_keys(session),
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
