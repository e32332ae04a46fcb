"""The Lambda's entry point: the app (app.py) built once per execution environment, from the
environment the stack gives the function."""

from __future__ import annotations

import os

from .app import create_app, dynamodb_client
from .settings import COUNTER_TABLE_ENV, IDEMPOTENCY_TABLE_ENV, SERIES_TABLE_ENV, SETTINGS_ENV, Settings

app = create_app(
    Settings.from_json(os.environ[SETTINGS_ENV]),
    dynamodb_client(),
    os.environ[COUNTER_TABLE_ENV],
    os.environ[IDEMPOTENCY_TABLE_ENV],
    series_table=os.environ.get(SERIES_TABLE_ENV),
)
lambda_handler = app.lambda_handler
