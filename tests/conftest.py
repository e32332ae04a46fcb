"""What every tier shares: the process environment the handler expects, the hypothesis profile CI uses,
and the package's pytest plugin. Nothing here imports moto, boto3 or aws_cdk: the unit tier
(tests/unit/conftest.py) checks that none of them is loaded.

The tiers' own fixtures live in their folders: the handler on moto in tests/functional/conftest.py
(built on moto_deployment.py, shared with tests/models), the synthesised stacks in tests/synth/.
Helper modules beside this file (common.py, moto_deployment.py, local_support.py, installed.py,
schemathesis_hooks.py) are importable from every tier: pytest puts this folder on sys.path."""

from __future__ import annotations

import gc
import importlib
import os

# The cyclic collector, tuned for test processes, which import much and keep it (moto, botocore, aws_cdk: a worker
# holds 300,000 to 600,000 objects). At Python's thresholds (700, 10, 10) a full collection of all of them ran every
# few seconds: 13 to 15 s of the functional tier's 74 to 78 s of CPU in its two workers. A young generation of 50,000
# objects makes every collection rarer: 4 s of 62 s, for 60 to 120 MB more memory a worker (at most 340 and 400 MB).
# The older generations keep Python's ratios (on 3.14, whose collector is incremental, the second number is its
# default scan rate and the third is unused).
gc.set_threshold(50_000, 10, 10)

# Powertools outside Lambda, and credentials moto accepts: set before anything imports boto3.
os.environ.update(
    {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
)

import pytest  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402

from common import PLUGIN_ENTRY_POINT  # noqa: E402
from tickets_deploy.environment import POWERTOOLS_ENVIRONMENT  # noqa: E402

# The CDK's built-in CloudFormation validation (aws-cdk-lib 2.275: App's builtinCloudFormationValidation, on unless
# CDK_VALIDATION=false) starts a WebAssembly engine in each process that synthesises, 1.5 s of CPU, and more for each
# template: off in the tests (and the processes they start), whose templates cfn-lint checks (tests/synth/linting.py).
# It stays on where a user meets it, `make synth` and the example app from the wheel (installed.synth_app's
# `validation`), whose reports must be empty. `CDK_VALIDATION=true make test` runs it everywhere.
os.environ.setdefault("CDK_VALIDATION", "false")

# The Powertools settings the stack gives the function (service name, metrics namespace): read when
# tickets.app is imported, so set first.
os.environ.update(POWERTOOLS_ENVIRONMENT)

# CI runs the property tests on a fixed set of examples, the same on every run; a developer's run
# draws new ones (and replays any failure from .hypothesis/).
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() in ("1", "true"):
    hypothesis_settings.load_profile("ci")


def pytest_configure(config: pytest.Config) -> None:
    """The tests use the package's pytest plugin (tickets_local.pytest_plugin: tickets_servers and the rest).
    An install registers it under its entry point's name; a checkout run from source, here."""
    if not config.pluginmanager.has_plugin(PLUGIN_ENTRY_POINT):
        config.pluginmanager.register(importlib.import_module("tickets_local.pytest_plugin"), PLUGIN_ENTRY_POINT)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Everything the run made, frozen once every plugin is done (pytest's own last collection, which reports what a
    `__del__` raised, has run): the interpreter's exit then does not scan it all again to free what the process'
    end frees anyway."""
    gc.freeze()
