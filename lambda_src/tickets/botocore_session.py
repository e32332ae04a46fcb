"""Sessions for the botocore clients Tickets makes: a session of its own for each client (its
credentials and settings resolved afresh), all sharing one process's data loader.

A new botocore session parses botocore's JSON models again (the endpoint rules, the service's API):
about 110 ms a client on the machines tests and the bench run on, and 20-30 ms with the parsed
models shared. A Lambda function makes its clients once, at start-up; a process that makes many (the
local server and the pytest plugin, one per server they start; `tickets_admin`, one per region) pays
that once. The models are botocore's own files, read only, as one session shares them among its clients.
"""

from __future__ import annotations

import threading
from typing import Any

import botocore.session

# What a command run by an operator (tickets_admin, the deploy check) says when botocore's chain finds no credentials.
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
