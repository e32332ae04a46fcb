"""Tickets: unique, increasing integers for named counters. Plain Python but for the modules that call AWS (the
stores, handler, idempotency): the domain is tested without a cloud."""

# The one place the release is written: the packages' metadata (pyproject.toml), `GET /_health` and every
# command's --version read it from here.
__version__ = "0.3.0"
