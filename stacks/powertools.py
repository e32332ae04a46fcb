"""AWS's public Powertools for AWS Lambda (Python) layer: the release the tests run against.

requirements-serve.txt pins the package the local server and the tests use; that pin is the only
place the version is written. The stack reads it and names the public SSM parameter Powertools writes
for that release, runtime and architecture in each region; CloudFormation resolves the parameter to
the layer's ARN at deploy time, so the deployed layer and the tested package are one release.
"""

from __future__ import annotations

import re
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements-serve.txt"
_PIN = re.compile(r"^aws-lambda-powertools==(\d+\.\d+\.\d+)$", re.M)


def powertools_version(requirements: Path = REQUIREMENTS) -> str:
    """The release requirements-serve.txt pins."""
    pins = _PIN.findall(requirements.read_text(encoding="utf-8"))
    if len(pins) != 1:
        raise ValueError(f"{requirements}: expected one aws-lambda-powertools==X.Y.Z pin, found {pins}")
    return str(pins[0])


def layer_parameter(runtime: str, architecture: str, version: str) -> str:
    """The public SSM parameter whose value is that release's layer ARN, e.g. for python3.14 on arm64."""
    return f"/aws/service/powertools/python/{architecture}/{runtime}/{version}"
