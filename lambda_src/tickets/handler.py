"""The Lambda's entry point: the app (app.py) built once per execution environment, from the
environment the stack gives the function."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from .access import ACCESS_PARAMETERS_ENV
from .access_store import StoredRules, ssm_client
from .app import create_app, dynamodb_client
from .errors import Unavailable
from .settings import (
    COUNTER_TABLE_ENV,
    IDEMPOTENCY_TABLE_ENV,
    OPAQUE_KEYS_ENV,
    SERIES_TABLE_ENV,
    SETTINGS_ENV,
    Settings,
)

if TYPE_CHECKING:
    from .opaque_secret import StoredKeys


def _access_rules() -> StoredRules | None:
    """The stored rules, read now (cold start); None without."""
    names = os.environ.get(ACCESS_PARAMETERS_ENV)
    if not names:
        return None
    rules = StoredRules(ssm_client(), names.split(","))
    with contextlib.suppress(Unavailable):  # then each request answers 503 and tries again (access_store.py)
        rules()
    return rules


def _opaque_keys() -> StoredKeys | None:
    """The keys of opaque ids, read now (cold start) from the parameter the environment names; None without."""
    name = os.environ.get(OPAQUE_KEYS_ENV)
    if not name:
        return None
    from .opaque_secret import parameter_keys  # only a function with opaque counters loads tickets.opaque

    return parameter_keys(name)


app = create_app(
    Settings.from_json(os.environ[SETTINGS_ENV]),
    dynamodb_client(),
    os.environ[COUNTER_TABLE_ENV],
    os.environ[IDEMPOTENCY_TABLE_ENV],
    series_table=os.environ.get(SERIES_TABLE_ENV),
    access=_access_rules(),
    opaque_keys=_opaque_keys(),
)
lambda_handler = app.lambda_handler
