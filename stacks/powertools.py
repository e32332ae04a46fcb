"""AWS's public Powertools for AWS Lambda (Python) layer, pinned.

Layer version 36 carries Powertools 3.31.1, the release requirements-serve.txt and requirements-dev.txt
pin for the local server and the tests, so the code is tested against what it runs with. Bump all together.
"""

POWERTOOLS_LAYER_ACCOUNT = "017000801446"
POWERTOOLS_LAYER_VERSION = 36
POWERTOOLS_VERSION = "3.31.1"


def powertools_layer_arn(region: str, python: str = "python314", architecture: str = "arm64") -> str:
    return (
        f"arn:aws:lambda:{region}:{POWERTOOLS_LAYER_ACCOUNT}:layer:"
        f"AWSLambdaPowertoolsPythonV3-{python}-{architecture}:{POWERTOOLS_LAYER_VERSION}"
    )
