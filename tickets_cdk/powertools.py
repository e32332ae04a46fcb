"""The release of AWS's public Powertools for AWS Lambda (Python) layer the function runs with, written once;
requirements-serve.txt pins the same one for the local server and the tests (tests/packaging/test_packaging.py)."""

from __future__ import annotations

POWERTOOLS_VERSION = "3.37.0"
