"""AWS's public Powertools for AWS Lambda (Python) layer: the release the function runs with.

POWERTOOLS_VERSION is the one place the release is written. The construct names the public SSM
parameter Powertools writes for that release, runtime and architecture in each region; CloudFormation
resolves it to the layer's ARN at deploy time. requirements-serve.txt pins the same release for the
local server and the tests (tests/packaging/test_packaging.py holds the pin to this constant), so the deployed
layer and the tested package are one release.
"""

from __future__ import annotations

POWERTOOLS_VERSION = "3.37.0"
