"""Sessions for Tickets' botocore clients, each its own, sharing one data loader: a new session parses botocore's
models again (about 110 ms a client here, 20-30 ms shared)."""

from __future__ import annotations

import threading
from typing import Any

import botocore.session

# What an operator's command says when botocore's chain finds no credentials.
NO_CREDENTIALS = (
    "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or sign in with aws sso "
    "login)"
)
_lock = threading.Lock()
_loader: Any = None  # the first session's, shared by every session after it


def new_session() -> botocore.session.Session:
    global _loader
    session = botocore.session.get_session()
    with _lock:
        if _loader is None:
            _loader = session.get_component("data_loader")
        else:
            session.register_component("data_loader", _loader)
    return session
