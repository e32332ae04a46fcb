"""SigV4 for Function URLs with AWS_IAM auth: botocore's signer and credential chain, service `lambda`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import TicketsError

# https://<url-id>.lambda-url.<region>.on.aws: only these need (and accept) a signature.
_FUNCTION_URL_HOST = re.compile(r"[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws")


def function_url_region(host: str) -> str | None:
    """The region of a Function URL host, or None for any other host (the local server, a proxy)."""
    match = _FUNCTION_URL_HOST.fullmatch(host.lower())
    return match.group(1) if match else None


class Signer:
    """Signs each attempt afresh (a signature is valid for 5 minutes; retries may outlast it)."""

    def __init__(self, region: str, credentials: Any = None):
        self.region = region
        self._credentials = credentials  # botocore Credentials; found through the chain on first use

    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        # botocore takes a good part of a second to import: only signing clients pay for it
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.exceptions import BotoCoreError

        try:
            self._credentials = self._credentials or botocore.session.Session().get_credentials()
        except BotoCoreError as err:  # e.g. AWS_PROFILE names a profile that does not exist
            raise TicketsError(None, "no_credentials", str(err)) from None
        if self._credentials is None:
            said = "no AWS credentials for SigV4 (botocore looks in the environment, ~/.aws config and SSO, a role)"
            raise TicketsError(None, "no_credentials", said)
        request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        frozen = self._credentials.get_frozen_credentials()  # refreshes temporary credentials in time
        SigV4Auth(frozen, "lambda", self.region).add_auth(request)
        return dict(request.headers.items())
