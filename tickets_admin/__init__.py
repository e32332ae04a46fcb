"""`.venv/bin/python -m tickets_admin`: the operator's commands on a deployment's counter table (raise, export)."""

import importlib.util
import sys

# `make init` and `make synth` install the CDK set alone; the commands their refusals name reach AWS through
# botocore, which `make deploy`'s set brings: say so rather than fail on an import.
if importlib.util.find_spec("botocore") is None:
    sys.exit(
        "error: tickets_admin reaches DynamoDB through botocore, which this Python lacks: "
        "`make .venv/.deploy` installs it (as `make deploy` and `make serve` do)"
    )
