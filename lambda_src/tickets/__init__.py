"""Tickets: unique, increasing integers for named counters.

Everything in this package except `handler`, `store` and `idempotency` is plain
Python with no AWS imports, so the domain can be tested (and reasoned about)
without a cloud.
"""

# The one place the release is written: the packages' metadata (pyproject.toml), `GET /_health` and every
# command's --version read it from here.
__version__ = "0.3.0"
